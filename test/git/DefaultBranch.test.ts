import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { request, startApp } from "../support/app.ts"
import { commit, createRepo, type GitClient, gitClient } from "./gitClient.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string }>()("test/git/DefaultBranchApp") {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl })))

let counter = 0
/** A fresh organization and repository, created with the configured default branch `main`. */
const newRepo = Effect.flatMap(
  TestApp,
  ({ baseUrl }) => createRepo(baseUrl, { slug: `defbranch-${process.pid}-${++counter}` })
)

const defaultBranch = (repo: { slug: string; name: string; key: string }) =>
  Effect.flatMap(TestApp, ({ baseUrl }) =>
    Effect.map(
      request(`${baseUrl}/api/v1/code/repos/${repo.slug}/${repo.name}`, { token: repo.key }),
      (response) => response.body.defaultBranch as string
    ))

/** A work tree with one commit on each of `branches` (created in that order, each from the first). */
const workTree = (git: GitClient, name: string, branches: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const dir = git.dir(name)
    yield* git.ok(["init", "-q", "-b", branches[0], dir])
    yield* commit(git, dir, { "a.txt": "a\n" }, "a")
    for (const branch of branches.slice(1)) {
      yield* git.ok(["checkout", "-q", "-b", branch, branches[0]], { cwd: dir })
      yield* commit(git, dir, { [`${branch}.txt`]: `${branch}\n` }, branch)
    }
    yield* git.ok(["checkout", "-q", branches[0]], { cwd: dir })
    return dir
  })

/** What `git ls-remote --symref` says HEAD points to, and the branch a plain clone checks out. */
const remoteHead = (git: GitClient, url: string, cloneName: string) =>
  Effect.gen(function*() {
    const listed = yield* git.ok(["ls-remote", "--symref", url, "HEAD"])
    const symref = /^ref: (\S+)\tHEAD$/m.exec(listed)?.[1]
    yield* git.ok(["clone", "-q", url, git.dir(cloneName)])
    const checkedOut = (yield* git.ok(["branch", "--show-current"], { cwd: git.dir(cloneName) })).trim()
    return { symref, checkedOut }
  })

layer(TestAppLive, { excludeTestServices: true, timeout: "180 seconds" })("Default branch after a push", (it) => {
  it.effect("prefers master over the first branch pushed when the configured main was not pushed, and says so", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo
      // 4.x sorts (and is sent) before master, as in the express import that chose 4.x.
      const dir = yield* workTree(git, "work", ["master", "4.x", "3.x"])
      yield* git.ok(["tag", "v1"], { cwd: dir })
      const pushed = yield* git.run(["push", repo.url, "--all"], { cwd: dir })
      expect(pushed.code, pushed.stderr).toBe(0)
      expect(pushed.stderr).toContain(`the default branch is now "master" ("main", the configured one, was not pushed)`)
      expect(yield* defaultBranch(repo)).toBe("master")
      expect(yield* remoteHead(git, repo.url, "copy")).toEqual({ symref: "refs/heads/master", checkedOut: "master" })
    }))

  it.effect("prefers main, and never moves an existing default branch", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo
      const dir = yield* workTree(git, "work", ["main", "alpha", "master"])
      const first = yield* git.run(["push", repo.url, "alpha", "main"], { cwd: dir })
      expect(first.code, first.stderr).toBe(0)
      expect(first.stderr).not.toContain("default branch is now")
      expect(yield* defaultBranch(repo)).toBe("main")
      const second = yield* git.run(["push", repo.url, "master"], { cwd: dir })
      expect(second.stderr).not.toContain("default branch is now")
      expect(yield* defaultBranch(repo)).toBe("main")
      expect(yield* remoteHead(git, repo.url, "copy")).toEqual({ symref: "refs/heads/main", checkedOut: "main" })
    }))

  it.effect("takes the first branch pushed when neither main nor master was, and keeps it on later pushes", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo
      const dir = yield* workTree(git, "work", ["zeta", "alpha", "master"])
      // Only tags first: no branch yet, so nothing is chosen.
      yield* git.ok(["tag", "v1"], { cwd: dir })
      yield* git.ok(["push", "-q", repo.url, "v1"], { cwd: dir })
      expect(yield* defaultBranch(repo)).toBe("main")
      const pushed = yield* git.run(["push", repo.url, "zeta", "alpha"], { cwd: dir })
      expect(pushed.stderr).toContain(`the default branch is now "zeta"`)
      expect(yield* defaultBranch(repo)).toBe("zeta")
      // A later master does not replace a default branch that exists.
      yield* git.ok(["push", "-q", repo.url, "master"], { cwd: dir })
      expect(yield* defaultBranch(repo)).toBe("zeta")
      expect(yield* remoteHead(git, repo.url, "copy")).toEqual({ symref: "refs/heads/zeta", checkedOut: "zeta" })
    }))
})
