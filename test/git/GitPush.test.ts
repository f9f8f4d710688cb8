import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { spawn } from "node:child_process"
import { gzipSync } from "node:zlib"
import { CreateEvent, DeleteEvent, PushEvent } from "../../schemas/git/Repositories.ts"
import { pkt } from "../../services/git/PktLine.ts"
import { startApp } from "../support/app.ts"
import { commit, createRepo, gitClient, pushedWorkTree } from "./gitClient.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string; readonly sql: SqlClient.SqlClient }>()(
  "test/git/GitPushApp"
) {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl, sql: app.sql })))

let counter = 0
const newRepo = () =>
  Effect.flatMap(TestApp, ({ baseUrl }) => createRepo(baseUrl, { slug: `push-${process.pid}-${++counter}` }))

const storedRefs = (repoId: string) =>
  Effect.flatMap(
    TestApp,
    ({ sql }) =>
      sql<{ name: string; sha: string }>`SELECT name, sha FROM repo_refs WHERE repo_id = ${repoId} ORDER BY name`.pipe(
        Effect.orDie
      )
  )

/** A receive-pack request by hand: one command, then `pack` bytes. */
const rawPush = (repo: { slug: string; key: string }, command: string, pack: Buffer) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestApp
    const body = Buffer.concat([pkt(`${command}\0report-status side-band-64k\n`), Buffer.from("0000"), pack])
    return yield* Effect.promise(async () => {
      const response = await fetch(`${baseUrl}/${repo.slug}/r.git/git-receive-pack`, {
        method: "POST",
        headers: {
          authorization: `Basic ${Buffer.from(`x:${repo.key}`).toString("base64")}`,
          "content-type": "application/x-git-receive-pack-request"
        },
        body
      })
      return { status: response.status, text: Buffer.from(await response.arrayBuffer()).toString("latin1") }
    })
  })

layer(TestAppLive, { excludeTestServices: true, timeout: "180 seconds" })("Git push", (it) => {
  it.effect("of two clients pushing to one branch at once, exactly one wins and no objects are lost", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo()
      yield* pushedWorkTree(git, repo.url)
      yield* git.ok(["clone", "-q", repo.url, git.dir("x")])
      yield* git.ok(["clone", "-q", repo.url, git.dir("y")])
      const x = yield* commit(git, git.dir("x"), { "x.txt": "x\n" }, "from x")
      const y = yield* commit(git, git.dir("y"), { "y.txt": "y\n" }, "from y")

      const [px, py] = yield* Effect.all([
        git.run(["push", "origin", "main"], { cwd: git.dir("x") }),
        git.run(["push", "origin", "main"], { cwd: git.dir("y") })
      ], { concurrency: 2 })
      expect([px.code, py.code].filter((code) => code === 0)).toHaveLength(1)
      const [winner, loser, loserDir] = px.code === 0 ? [x, y, "y"] : [y, x, "x"]
      expect(yield* storedRefs(repo.id)).toEqual([{ name: "refs/heads/main", sha: winner }])

      // The loser catches up and pushes again: both commits end up on the branch.
      yield* git.ok(["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"], { cwd: git.dir(loserDir) })
      yield* git.ok(["push", "origin", "main"], { cwd: git.dir(loserDir) })
      yield* git.ok(["clone", "-q", repo.url, git.dir("final")])
      for (const sha of [winner, loser]) yield* git.ok(["cat-file", "-e", sha], { cwd: git.dir("final") })
      yield* git.ok(["fsck", "--no-progress"], { cwd: git.dir("final") })
    }))

  it.effect("refuses a corrupt or truncated pack and leaves the refs unchanged", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo()
      const { dir: a, head: first } = yield* pushedWorkTree(git, repo.url)
      const second = yield* commit(git, a, { "b.txt": "b\n".repeat(1000) }, "b")
      const pack = Buffer.from(
        yield* Effect.promise(() =>
          new Promise<Buffer>((resolve) => {
            const child = spawn("git", ["pack-objects", "--stdout", "--revs"], { cwd: a, env: git.env })
            const out: Array<Buffer> = []
            child.stdout.on("data", (chunk: Buffer) => out.push(chunk))
            child.on("close", () => resolve(Buffer.concat(out)))
            child.stdin.end(`${second}\n^${first}\n`)
          })
        )
      )
      const { sql } = yield* TestApp
      const packsBefore = yield* sql`SELECT name FROM repo_packs WHERE repo_id = ${repo.id}`.pipe(Effect.orDie)
      const command = `${first} ${second} refs/heads/main`
      const corrupt = Buffer.from(pack)
      corrupt[Math.floor(corrupt.length / 2)] ^= 0xff
      for (const body of [corrupt, pack.subarray(0, pack.length - 30), Buffer.from("PACK garbage")]) {
        const response = yield* rawPush(repo, command, body)
        expect(response.status).toBe(200)
        expect(response.text).not.toContain("unpack ok")
        expect(response.text).toContain("ng refs/heads/main")
        expect(yield* storedRefs(repo.id)).toEqual([{ name: "refs/heads/main", sha: first }])
      }
      expect(yield* sql`SELECT name FROM repo_packs WHERE repo_id = ${repo.id}`.pipe(Effect.orDie)).toEqual(packsBefore)
      // The intact pack goes through the same way.
      const good = yield* rawPush(repo, command, pack)
      expect(good.text).toContain("unpack ok")
      expect(good.text).toContain("ok refs/heads/main")
      expect(yield* storedRefs(repo.id)).toEqual([{ name: "refs/heads/main", sha: second }])
    }))

  it.effect("refuses pushes to an archived repository with a clear message; fetches keep working", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo()
      const { dir: a, head: first } = yield* pushedWorkTree(git, repo.url)
      const { sql } = yield* TestApp
      yield* sql`UPDATE repositories SET archived = true WHERE id = ${repo.id}`.pipe(Effect.orDie)
      yield* commit(git, a, { "b.txt": "b\n" }, "b")
      const refused = yield* git.run(["push", repo.url, "main"], { cwd: a })
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toContain("archived")
      expect(yield* storedRefs(repo.id)).toEqual([{ name: "refs/heads/main", sha: first }])
      yield* git.ok(["clone", "-q", repo.url, git.dir("copy")])
    }))

  it.effect("publishes push, create and delete events with the pushed commits", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo()
      const a = git.dir("a")
      yield* git.ok(["init", "-q", a])
      const one = yield* commit(git, a, { "1.txt": "1\n" }, "first line\n\nbody")
      const two = yield* commit(git, a, { "2.txt": "2\n" }, "second")
      yield* git.ok(["push", repo.url, "main", "main:topic"], { cwd: a })
      yield* git.ok(["push", repo.url, "--delete", "topic"], { cwd: a })
      const { sql } = yield* TestApp
      const events = yield* sql<{ type: string; data: any }>`
        SELECT type, data FROM domain_events WHERE type IN ('push', 'create', 'delete')
        AND data->'repository'->>'id' = ${repo.id} ORDER BY id`.pipe(Effect.orDie)
      const pushes = events.filter((e) => e.type === "push")
      // Consumers read the payload with the shared event Schemas.
      for (const event of events) {
        const matched = event.type === "push"
          ? Option.isSome(PushEvent.match(event))
          : Option.isSome((event.type === "create" ? CreateEvent : DeleteEvent).match(event))
        expect(matched, event.type).toBe(true)
      }
      const main = pushes.find((e) => e.data.ref === "refs/heads/main")!.data
      expect(main).toMatchObject({
        repository: { id: repo.id, name: "r", fullName: `${repo.slug}/r` },
        sender: { name: `${repo.slug}-owner`, email: `${repo.slug}-owner@example.com` },
        before: "0".repeat(40),
        after: two
      })
      expect(main.commits.map((c: any) => [c.sha, c.message, c.author])).toEqual([
        [one, "first line\n\nbody", { name: "Ada Lovelace", email: "ada@example.com" }],
        [two, "second", { name: "Ada Lovelace", email: "ada@example.com" }]
      ])
      expect(main.commits[0].timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      expect(events.filter((e) => e.type !== "push").map((e) => [e.type, e.data.ref, e.data.refType])).toEqual(
        expect.arrayContaining([["create", "main", "branch"], ["create", "topic", "branch"], [
          "delete",
          "topic",
          "branch"
        ]])
      )
      expect(pushes.find((e) => e.data.after === "0".repeat(40))?.data.ref).toBe("refs/heads/topic")
    }))

  it.effect("accepts a gzip-compressed upload-pack request", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo()
      const { head } = yield* pushedWorkTree(git, repo.url)
      const { baseUrl } = yield* TestApp
      const body = gzipSync(Buffer.concat([pkt(`want ${head} ofs-delta\n`), Buffer.from("0000"), pkt("done\n")]))
      const response = yield* Effect.promise(async () => {
        const res = await fetch(`${baseUrl}/${repo.slug}/r.git/git-upload-pack`, {
          method: "POST",
          headers: {
            authorization: `Basic ${Buffer.from(`x:${repo.key}`).toString("base64")}`,
            "content-type": "application/x-git-upload-pack-request",
            "content-encoding": "gzip"
          },
          body
        })
        return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()) }
      })
      expect(response.status).toBe(200)
      expect(response.bytes.subarray(0, 8).toString()).toBe("0008NAK\n")
      expect(response.bytes.subarray(8, 12).toString()).toBe("PACK")
    }))

  it.effect("refuses reserved refs per ref, with the reason in report-status and on the progress channel", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo()
      const { dir, head } = yield* pushedWorkTree(git, repo.url)
      const pushed = yield* git.run(["push", repo.url, "main:refs/pull/1/head", "main:refs/heads/copy"], { cwd: dir })
      expect(pushed.code).not.toBe(0)
      expect(pushed.stderr).toContain("remote: Canopy: refs/pull/1/head refused: refs/pull/ is reserved")
      expect(pushed.stderr).toMatch(/\[remote rejected\]\s+main -> refs\/pull\/1\/head \(refs\/pull\/ is reserved\)/)
      expect(yield* storedRefs(repo.id)).toEqual([
        { name: "refs/heads/copy", sha: head },
        { name: "refs/heads/main", sha: head }
      ])
    }))

  it.effect("warns at 80% of the plan's storage and refuses pushes and LFS uploads at 100%; fetches continue", () =>
    Effect.gen(function*() {
      const { baseUrl, sql } = yield* TestApp
      const repo = yield* createRepo(baseUrl, { slug: `quota-${process.pid}`, plan: "free" })
      const git = yield* gitClient
      const { dir } = yield* pushedWorkTree(git, repo.url)
      const GiB = 1024 ** 3
      yield* sql`UPDATE repositories SET lfs_bytes = ${Math.round(0.85 * GiB)} WHERE id = ${repo.id}`.pipe(Effect.orDie)
      yield* commit(git, dir, { "b.txt": "b\n" }, "b")
      const warned = yield* git.run(["push", repo.url, "main"], { cwd: dir })
      expect(warned.code, warned.stderr).toBe(0)
      expect(warned.stderr).toContain("remote: Canopy: warning: the organization uses 85% of its plan's storage")

      yield* sql`UPDATE repositories SET lfs_bytes = ${GiB} WHERE id = ${repo.id}`.pipe(Effect.orDie)
      const before = yield* storedRefs(repo.id)
      const third = yield* commit(git, dir, { "c.txt": "c\n" }, "c")
      const refused = yield* git.run(["push", repo.url, "main"], { cwd: dir })
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toContain("storage quota")
      expect(yield* storedRefs(repo.id)).toEqual(before)
      expect(before[0].sha).not.toBe(third)
      yield* git.ok(["clone", "-q", repo.url, git.dir("copy")])

      const batch = yield* Effect.promise(() =>
        fetch(`${baseUrl}/${repo.slug}/r.git/info/lfs/objects/batch`, {
          method: "POST",
          headers: {
            authorization: `Basic ${Buffer.from(`x:${repo.key}`).toString("base64")}`,
            "content-type": "application/vnd.git-lfs+json"
          },
          body: JSON.stringify({ operation: "upload", objects: [{ oid: "a".repeat(64), size: 10 }] })
        }).then((r) => r.json() as Promise<any>)
      )
      expect(batch.objects[0].error.code).toBe(507)
    }))
})
