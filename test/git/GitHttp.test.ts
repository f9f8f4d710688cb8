import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { request, startApp } from "../support/app.ts"
import { cloneUrl, commit, createRepo, gitClient, pushedWorkTree, writeFiles } from "./gitClient.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string; readonly sql: SqlClient.SqlClient }>()(
  "test/git/GitHttpApp"
) {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl, sql: app.sql })))

let counter = 0
/** A fresh organization with a key and one repository. */
const newRepo = (options?: { visibility?: string; name?: string }) =>
  Effect.flatMap(
    TestApp,
    ({ baseUrl }) =>
      createRepo(baseUrl, { slug: `git-${process.pid}-${++counter}`, name: options?.name ?? "project", ...options })
  )

const branches = (org: string, repo: string, key: string) =>
  Effect.flatMap(
    TestApp,
    ({ baseUrl }) => request(`${baseUrl}/api/v1/code/repos/${org}/${repo}/branches`, { token: key })
  )

const api = (path: string, key: string) =>
  Effect.flatMap(TestApp, ({ baseUrl }) => request(`${baseUrl}/api/v1/code/repos${path}`, { token: key }))

layer(TestAppLive, { excludeTestServices: true, timeout: "180 seconds" })("Git smart HTTP", (it) => {
  it.effect("clones an empty repository, pushes, and clones the same tree back", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo()
      const empty = yield* git.run(["clone", repo.url, git.dir("empty")])
      expect(empty.code, empty.stderr).toBe(0)
      expect(empty.stderr).toContain("empty repository")

      const work = git.dir("empty")
      yield* writeFiles(work, { "README.md": "# Hello\n", "src/main.ts": "console.log(1)\n" })
      yield* git.ok(["add", "."], { cwd: work })
      yield* git.ok(["commit", "-m", "first commit"], { cwd: work })
      yield* git.ok(["push", "origin", "main"], { cwd: work })

      yield* git.ok(["clone", repo.url, git.dir("copy")])
      const original = yield* git.ok(["rev-parse", "HEAD^{tree}"], { cwd: work })
      const copied = yield* git.ok(["rev-parse", "HEAD^{tree}"], { cwd: git.dir("copy") })
      expect(copied).toBe(original)
      const listed = yield* branches(repo.slug, repo.name, repo.key)
      expect(listed.body.branches).toEqual([
        {
          name: "main",
          commitSha: (yield* git.ok(["rev-parse", "HEAD"], { cwd: work })).trim(),
          isDefault: true,
          protected: false
        }
      ])
    }))

  it.effect("fetches new commits incrementally, lists branches and tags, deletes and force-pushes branches", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo()
      const a = git.dir("a")
      yield* git.ok(["init", "-q", a])
      yield* commit(git, a, { "one.txt": "1\n" }, "one")
      yield* git.ok(["remote", "add", "origin", repo.url], { cwd: a })
      yield* git.ok(["push", "-u", "origin", "main"], { cwd: a })
      yield* git.ok(["clone", "-q", repo.url, git.dir("b")])

      yield* commit(git, a, { "two.txt": "2\n" }, "two")
      yield* git.ok(["tag", "-a", "v1.0", "-m", "release 1.0"], { cwd: a })
      yield* git.ok(["tag", "light"], { cwd: a })
      yield* git.ok(["push", "origin", "main", "v1.0", "light"], { cwd: a })
      yield* git.ok(["push", "origin", "main:feature/x"], { cwd: a })

      const fetched = yield* git.run(["fetch", "origin"], { cwd: git.dir("b") })
      expect(fetched.code, fetched.stderr).toBe(0)
      const head = (yield* git.ok(["rev-parse", "HEAD"], { cwd: a })).trim()
      expect((yield* git.ok(["rev-parse", "origin/main"], { cwd: git.dir("b") })).trim()).toBe(head)
      expect((yield* git.ok(["tag", "-l"], { cwd: git.dir("b") })).split("\n").filter(Boolean)).toEqual([
        "light",
        "v1.0"
      ])

      const listed = yield* branches(repo.slug, repo.name, repo.key)
      expect(listed.body.branches.map((b: any) => [b.name, b.commitSha, b.isDefault])).toEqual([
        ["feature/x", head, false],
        ["main", head, true]
      ])
      const tags = yield* api(`/${repo.slug}/${repo.name}/tags`, repo.key)
      const tagObject = (yield* git.ok(["rev-parse", "v1.0"], { cwd: a })).trim()
      expect(tags.body.tags).toEqual([
        { name: "light", sha: head, commitSha: head },
        { name: "v1.0", sha: tagObject, commitSha: head }
      ])

      yield* git.ok(["push", "origin", "--delete", "feature/x"], { cwd: a })
      expect((yield* branches(repo.slug, repo.name, repo.key)).body.branches.map((b: any) => b.name)).toEqual(["main"])

      // Rewrite history: a plain push is refused by git, a forced one replaces the branch.
      yield* git.ok(["reset", "-q", "--hard", "HEAD~1"], { cwd: a })
      yield* commit(git, a, { "other.txt": "x\n" }, "rewritten")
      const plain = yield* git.run(["push", "origin", "main"], { cwd: a })
      expect(plain.code).not.toBe(0)
      yield* git.ok(["push", "--force", "origin", "main"], { cwd: a })
      const rewritten = (yield* git.ok(["rev-parse", "HEAD"], { cwd: a })).trim()
      expect((yield* branches(repo.slug, repo.name, repo.key)).body.branches[0].commitSha).toBe(rewritten)
      yield* git.ok(["fetch", "-q", "origin"], { cwd: git.dir("b") })
      expect((yield* git.ok(["rev-parse", "origin/main"], { cwd: git.dir("b") })).trim()).toBe(rewritten)
    }))

  it.effect("serves shallow clones, protocol v0 and v2, and round-trips a 5 MB binary", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo()
      const a = git.dir("a")
      yield* git.ok(["init", "-q", a])
      yield* git.ok(["remote", "add", "origin", repo.url], { cwd: a })
      const binary = randomBytes(5 * 1024 * 1024)
      yield* commit(git, a, { "blob.bin": binary }, "binary")
      for (let i = 0; i < 3; i++) yield* commit(git, a, { [`f${i}.txt`]: `${i}\n` }, `c${i}`)
      yield* git.ok(["push", "origin", "main"], { cwd: a })

      yield* git.ok(["clone", "-q", "--depth", "1", repo.url, git.dir("shallow")])
      expect((yield* git.ok(["rev-list", "--count", "HEAD"], { cwd: git.dir("shallow") })).trim()).toBe("1")
      expect(Fs.readFileSync(Path.join(git.dir("shallow"), "blob.bin")).equals(binary)).toBe(true)
      yield* git.ok(["fetch", "-q", "--deepen", "2"], { cwd: git.dir("shallow") })
      expect((yield* git.ok(["rev-list", "--count", "HEAD"], { cwd: git.dir("shallow") })).trim()).toBe("3")

      for (const version of ["0", "2"]) {
        const target = git.dir(`v${version}`)
        const cloned = yield* git.run(["-c", `protocol.version=${version}`, "clone", repo.url, target])
        expect(cloned.code, cloned.stderr).toBe(0)
        expect((yield* git.ok(["rev-list", "--count", "HEAD"], { cwd: target })).trim()).toBe("4")
        yield* git.ok(["fsck", "--no-progress"], { cwd: target })
      }
    }))

  it.effect("lets anyone fetch a public repository, asks for credentials on a private one, refuses a wrong key", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const open = yield* newRepo({ visibility: "public", name: "open" })
      const closed = yield* newRepo({ name: "closed" })
      for (const repo of [open, closed]) {
        yield* pushedWorkTree(git, repo.url, repo.name)
      }
      yield* git.ok(["clone", "-q", open.anonymousUrl, git.dir("anon-open")])
      const anonPush = yield* git.run(["push", open.anonymousUrl, "main:other"], { cwd: git.dir("open") })
      expect(anonPush.code).not.toBe(0)

      const denied = yield* git.run(["clone", closed.anonymousUrl, git.dir("anon-closed")])
      expect(denied.code).not.toBe(0)
      expect(denied.stderr).toMatch(/Authentication failed|could not read Username|401/)
      const { baseUrl } = yield* TestApp
      const raw = yield* request(
        `${closed.anonymousUrl}/info/refs?service=git-upload-pack`.replace(/^http:\/\/[^/]+/, baseUrl)
      )
      expect(raw.status).toBe(401)
      expect(raw.headers.get("www-authenticate")).toMatch(/^Basic /)

      const wrong = yield* git.run(["clone", cloneUrl(baseUrl, closed.slug, "closed", "cnp_wrong"), git.dir("wrong")])
      expect(wrong.code).not.toBe(0)
      expect(wrong.stderr).toMatch(/Authentication failed|401/)
    }))

  it.effect("answers 404 to another organization's key, for fetch and push", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const mine = yield* newRepo()
      const other = yield* newRepo()
      const { baseUrl } = yield* TestApp
      const foreign = cloneUrl(baseUrl, mine.slug, mine.name, other.key)
      const cloned = yield* git.run(["clone", foreign, git.dir("x")])
      expect(cloned.code).not.toBe(0)
      expect(cloned.stderr).toMatch(/not found|404/)
      const raw = yield* request(`${baseUrl}/${mine.slug}/${mine.name}.git/info/refs?service=git-receive-pack`, {
        headers: { authorization: `Basic ${Buffer.from(`x:${other.key}`).toString("base64")}` }
      })
      expect(raw.status).toBe(404)
      expect(raw.body.error).toBe("not_found")
    }))

  it.effect("round-trips a submodule entry pointing at an external URL", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo()
      const a = git.dir("a")
      yield* git.ok(["init", "-q", a])
      const gitlink = "0123456789abcdef0123456789abcdef01234567"
      yield* writeFiles(a, {
        ".gitmodules": "[submodule \"lib\"]\n\tpath = lib\n\turl = https://github.com/example/lib.git\n"
      })
      yield* git.ok(["add", ".gitmodules"], { cwd: a })
      yield* git.ok(["update-index", "--add", "--cacheinfo", `160000,${gitlink},lib`], { cwd: a })
      yield* git.ok(["commit", "-q", "-m", "submodule"], { cwd: a })
      yield* git.ok(["push", repo.url, "main"], { cwd: a })
      yield* git.ok(["clone", "-q", repo.url, git.dir("copy")])
      const entry = yield* git.ok(["ls-tree", "HEAD", "lib"], { cwd: git.dir("copy") })
      expect(entry.trim()).toBe(`160000 commit ${gitlink}\tlib`)
      expect(Fs.readFileSync(Path.join(git.dir("copy"), ".gitmodules"), "utf8")).toContain(
        "https://github.com/example/lib.git"
      )
    }))

  it.effect("makes the first pushed branch the default when the configured one was not pushed", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo()
      const work = git.dir("work")
      yield* git.ok(["init", "-q", "-b", "trunk", work])
      yield* commit(git, work, { "a.txt": "a\n" }, "a")
      yield* git.ok(["push", "-q", repo.url, "trunk"], { cwd: work })
      expect((yield* api(`/${repo.slug}/${repo.name}`, repo.key)).body.defaultBranch).toBe("trunk")
      const cloned = yield* git.run(["clone", repo.url, git.dir("copy")])
      expect(cloned.stderr).not.toContain("nonexistent ref")
      expect((yield* git.ok(["branch", "--show-current"], { cwd: git.dir("copy") })).trim()).toBe("trunk")
    }))
})
