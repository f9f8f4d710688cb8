import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { request, startApp } from "../support/app.ts"
import { commit, createRepo, gitClient } from "./gitClient.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string }>()("test/git/PagingApp") {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl })))

let counter = 0
const newRepo = Effect.flatMap(
  TestApp,
  ({ baseUrl }) => createRepo(baseUrl, { slug: `paging-${process.pid}-${++counter}` })
)

const get = (path: string, key: string) =>
  Effect.flatMap(TestApp, ({ baseUrl }) => request(`${baseUrl}/api/v1${path}`, { token: key }))

layer(TestAppLive, { excludeTestServices: true, timeout: "180 seconds" })("Paging and strict queries", (it) => {
  it.effect("pages the commit list by cursor, pinned to the first page's commit while pushes go on", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo
      const dir = git.dir("work")
      yield* git.ok(["init", "-q", dir])
      for (let i = 0; i < 7; i++) yield* commit(git, dir, { "n.txt": `${i}\n` }, `commit ${i}`)
      yield* git.ok(["push", "-q", repo.url, "main"], { cwd: dir })
      const expected = (yield* git.ok(["log", "--format=%H"], { cwd: dir })).trim().split("\n")
      const base = `/code/repos/${repo.slug}/${repo.name}/commits`

      const first = yield* get(`${base}?limit=3`, repo.key)
      expect(first.status, JSON.stringify(first.body)).toBe(200)
      expect(first.body.count).toBe(7)
      expect(typeof first.body.nextCursor).toBe("string")
      // A push between two pages does not shift the walk.
      yield* commit(git, dir, { "n.txt": "later\n" }, "later")
      yield* git.ok(["push", "-q", repo.url, "main"], { cwd: dir })
      const second = yield* get(`${base}?limit=3&cursor=${first.body.nextCursor}`, repo.key)
      const third = yield* get(`${base}?limit=3&cursor=${second.body.nextCursor}`, repo.key)
      expect(third.body.nextCursor).toBeNull()
      const listed = [first, second, third].flatMap((page) => page.body.commits.map((c: { sha: string }) => c.sha))
      expect(listed).toEqual(expected)
      // Without a cursor: the new head first.
      const fresh = yield* get(`${base}?limit=1`, repo.key)
      expect(fresh.body.count).toBe(8)
      expect(fresh.body.commits[0].message).toBe("later")

      const forged = yield* get(`${base}?cursor=not-a-cursor`, repo.key)
      expect(forged.status).toBe(400)
      expect(forged.body.details).toEqual([{ path: "query.cursor", message: "not a cursor of this list" }])
    }))

  it.effect("unknown query parameters are a 400 naming them, with or without a query Schema", () =>
    Effect.gen(function*() {
      const repo = yield* newRepo
      const base = `/code/repos/${repo.slug}/${repo.name}`
      const paged = yield* get(`${base}/commits?page=2&limit=5`, repo.key)
      expect(paged.status).toBe(400)
      expect(paged.body.error).toBe("validation_error")
      expect(paged.body.details.map((d: { path: string }) => d.path)).toEqual(["query.page"])

      const plain = yield* get(`${base}?offset=10&path=src`, repo.key)
      expect(plain.status).toBe(400)
      expect(plain.body.error).toBe("validation_error")
      expect(plain.body.message).toContain("offset, path")
      expect(plain.body.details).toEqual([
        { path: "query.offset", message: "Unknown query parameter" },
        { path: "query.path", message: "Unknown query parameter" }
      ])
      // Other features' endpoints too, and known parameters still pass.
      const me = yield* get(`/me?verbose=1`, repo.key)
      expect(me.status).toBe(400)
      expect(me.body.details[0].path).toBe("query.verbose")
      expect((yield* get(`${base}/commits?limit=5`, repo.key)).status).not.toBe(400)
    }))

  it.effect("branches, tags and repositories page by limit and offset; count is the total", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo
      const dir = git.dir("work")
      yield* git.ok(["init", "-q", dir])
      yield* commit(git, dir, { "a.txt": "a\n" }, "a")
      for (const name of ["b1", "b2", "b3", "b4"]) yield* git.ok(["branch", name], { cwd: dir })
      for (const name of ["t1", "t2", "t3"]) yield* git.ok(["tag", name], { cwd: dir })
      yield* git.ok(["push", "-q", repo.url, "--all"], { cwd: dir })
      yield* git.ok(["push", "-q", repo.url, "--tags"], { cwd: dir })
      const base = `/code/repos/${repo.slug}/${repo.name}`

      const branches = yield* get(`${base}/branches?limit=2&offset=2`, repo.key)
      expect(branches.status).toBe(200)
      expect(branches.body.count).toBe(5)
      expect(branches.body.branches.map((b: { name: string }) => b.name)).toEqual(["b3", "b4"])
      const tags = yield* get(`${base}/tags?limit=2&offset=1`, repo.key)
      expect(tags.body.count).toBe(3)
      expect(tags.body.tags.map((t: { name: string }) => t.name)).toEqual(["t2", "t3"])
      const repos = yield* get(`/code/repos?limit=1&offset=1`, repo.key)
      expect(repos.body).toMatchObject({ repositories: [], count: 1 })
      expect((yield* get(`${base}/branches?limit=0`, repo.key)).status).toBe(400)
    }))
})
