import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { request, startApp } from "../support/app.ts"
import { commit, createRepo, gitClient } from "./gitClient.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string; readonly sql: SqlClient.SqlClient }>()(
  "test/git/ManyRefsApp"
) {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl, sql: app.sql })))

layer(TestAppLive, { excludeTestServices: true, timeout: "180 seconds" })("A push of many refs", (it) => {
  it.effect("stores every branch and tag of one push, peels annotated tags, and lists each new commit in one event", () =>
    Effect.gen(function*() {
      const { baseUrl, sql } = yield* TestApp
      const git = yield* gitClient
      const repo = yield* createRepo(baseUrl, { slug: `manyrefs-${process.pid}` })
      const dir = git.dir("work")
      yield* git.ok(["init", "-q", dir])
      const shas: Array<string> = []
      for (let i = 0; i < 6; i++) shas.push(yield* commit(git, dir, { "n.txt": `${i}\n` }, `c${i}`))
      // 60 tags (every third annotated) and 10 branches along the history.
      for (let i = 0; i < 60; i++) {
        const at = shas[i % shas.length]
        yield* git.ok(i % 3 === 0 ? ["tag", "-a", `v${i}`, "-m", `release ${i}`, at] : ["tag", `v${i}`, at], {
          cwd: dir
        })
      }
      for (let i = 0; i < 10; i++) yield* git.ok(["branch", `b${i}`, shas[i % shas.length]], { cwd: dir })
      const pushed = yield* git.run(["push", repo.url, "refs/heads/*:refs/heads/*", "refs/tags/*:refs/tags/*"], {
        cwd: dir
      })
      expect(pushed.code, pushed.stderr).toBe(0)

      const base = `${baseUrl}/api/v1/code/repos/${repo.slug}/${repo.name}`
      const tags = yield* request(`${base}/tags?limit=100`, { token: repo.key })
      expect(tags.body.count).toBe(60)
      const expected =
        (yield* git.ok(["for-each-ref", "--format=%(refname:short) %(objectname) %(*objectname)", "refs/tags"], {
          cwd: dir
        })).trim().split("\n").map((line) => {
          const [name, sha, peeled] = line.split(" ")
          return { name, sha, commitSha: peeled === "" || peeled === undefined ? sha : peeled }
        })
      expect([...tags.body.tags].sort((a, b) => a.name.localeCompare(b.name))).toEqual(
        expected.sort((a, b) => a.name.localeCompare(b.name))
      )
      expect((yield* request(`${base}/branches`, { token: repo.key })).body.count).toBe(11)

      // The push's events: one push (and one create) per ref, each new commit listed once, by
      // the default branch first; the tags and the other branches list none of them again.
      const events = yield* sql<{ ref: string; commits: Array<{ sha: string }> }>`
        SELECT data->>'ref' AS ref, data->'commits' AS commits FROM domain_events
        WHERE type = 'push' AND data->'repository'->>'id' = ${repo.id}`.pipe(Effect.orDie)
      expect(events.length).toBe(71)
      const listed = events.flatMap((event) => event.commits.map((c) => c.sha))
      expect([...listed].sort()).toEqual([...shas].sort())
      expect(events.find((event) => event.ref === "refs/heads/main")!.commits.map((c) => c.sha)).toEqual(shas)
    }))
})
