import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { nextNumber } from "../../services/git/RepositoryNumbers.ts"
import { createRepo } from "../git/gitClient.ts"
import { bootstrapOrg, request, startApp } from "../support/app.ts"

class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly sql: SqlClient.SqlClient
}>()("test/issues/IssuesApiApp") {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl, sql: app.sql })))

/** The `issue.*` domain events of a repository, oldest first. */
const issueEvents = (sql: SqlClient.SqlClient, repoId: string) =>
  sql<{ type: string; data: any }>`
    SELECT type, data FROM domain_events
    WHERE type LIKE 'issue.%' AND data->'repository'->>'id' = ${repoId} ORDER BY id`.pipe(Effect.orDie)

layer(TestAppLive, { excludeTestServices: true, timeout: "120 seconds" })("repository issues API", (it) => {
  it.effect("opens, lists by state, reads, edits, closes and reopens issues, each with its event", () =>
    Effect.gen(function*() {
      const { baseUrl, sql } = yield* TestApp
      const repo = yield* createRepo(baseUrl, { slug: "issues" })
      const api = (path: string, init?: { method?: string; body?: unknown }) =>
        request(`${baseUrl}/api/v1/code/repos/issues/r${path}`, { ...init, token: repo.key })

      const first = yield* api("/issues", {
        method: "POST",
        body: { title: "  Crash on start ", body: "Steps…", labels: ["bug", " bug", "p1"] }
      })
      expect(first.status).toBe(201)
      expect(first.body).toMatchObject({
        id: expect.stringMatching(/^iss_/),
        number: 1,
        title: "Crash on start",
        body: "Steps…",
        state: "open",
        labels: ["bug", "p1"],
        author: { id: repo.user.id },
        closedAt: null,
        closedBy: null
      })
      // The number sequence is shared with pull requests: a number taken in between is skipped.
      yield* sql.withTransaction(nextNumber(repo.id)).pipe(Effect.provideService(SqlClient.SqlClient, sql))
      const second = yield* api("/issues", { method: "POST", body: { title: "Docs typo" } })
      expect(second.body).toMatchObject({ number: 3, body: "", labels: [] })
      expect((yield* api("/issues/2")).status).toBe(404)

      expect((yield* api("/issues/1")).body).toEqual(first.body)
      const edited = yield* api("/issues/1", { method: "PATCH", body: { title: "Crash on start-up", labels: ["bug"] } })
      expect(edited.status).toBe(200)
      expect(edited.body).toMatchObject({ title: "Crash on start-up", labels: ["bug"], state: "open" })
      const unchanged = yield* api("/issues/1", { method: "PATCH", body: { title: "Crash on start-up" } })
      expect(unchanged.body.updatedAt).toBe(edited.body.updatedAt)

      const closed = yield* api("/issues/1", { method: "PATCH", body: { state: "closed" } })
      expect(closed.body).toMatchObject({ state: "closed", closedBy: null, closedAt: expect.any(String) })
      expect((yield* api("/issues")).body.issues.map((i: any) => i.number)).toEqual([3])
      expect((yield* api("/issues?state=closed")).body.issues.map((i: any) => i.number)).toEqual([1])
      expect((yield* api("/issues?state=all")).body.issues.map((i: any) => i.number)).toEqual([3, 1])
      expect((yield* api("/issues?state=all&limit=1")).body.issues.map((i: any) => i.number)).toEqual([3])
      expect((yield* api("/issues?state=all&limit=1&page=2")).body.issues.map((i: any) => i.number)).toEqual([1])
      // `count` is the total matching the filter, not the page's length (GUIDE §4).
      expect((yield* api("/issues?state=all&limit=1")).body.count).toBe(2)
      expect((yield* api("/issues")).body.count).toBe(1)
      expect((yield* api("/issues?state=closed&page=9")).body).toEqual({ issues: [], count: 1 })
      const reopened = yield* api("/issues/1", { method: "PATCH", body: { state: "open" } })
      expect(reopened.body).toMatchObject({ state: "open", closedAt: null, closedBy: null })

      const comment = yield* api("/issues/3/comments", { method: "POST", body: { body: "Fixed the typo?" } })
      expect(comment.status).toBe(201)
      expect(comment.body).toMatchObject({
        id: expect.stringMatching(/^issuecomment_/),
        body: "Fixed the typo?",
        author: { id: repo.user.id }
      })
      expect((yield* api("/issues/3/comments")).body).toEqual({ comments: [comment.body], count: 1 })

      const events = yield* issueEvents(sql, repo.id)
      expect(events.map((e) => [e.type, e.data.issue.number])).toEqual([
        ["issue.opened", 1],
        ["issue.opened", 3],
        ["issue.updated", 1],
        ["issue.closed", 1],
        ["issue.updated", 1],
        ["issue.commented", 3]
      ])
      expect(events[2].data.changes).toEqual({ title: { from: "Crash on start" }, labels: { from: ["bug", "p1"] } })
      expect(events[4].data.changes).toEqual({ state: { from: "closed" } })
      expect(events[5].data.comment).toEqual(comment.body)
      expect(events[0].data).toMatchObject({
        repository: { id: repo.id, name: "r", fullName: "issues/r" },
        sender: { id: repo.user.id }
      })
    }))

  it.effect("validation is a 400, another organization's repository and unknown numbers 404, scopes apply", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const repo = yield* createRepo(baseUrl, { slug: "strict" })
      const url = `${baseUrl}/api/v1/code/repos/strict/r/issues`
      const post = (body: unknown, token = repo.key) => request(url, { method: "POST", token, body })

      for (
        const body of [
          {},
          { title: "   " },
          { title: "x".repeat(257) },
          { title: "ok", labels: [""] },
          { title: "ok", labels: "bug" },
          { title: "ok", assignee: "bob" }
        ]
      ) {
        const answer = yield* post(body)
        expect(answer.status, JSON.stringify(body)).toBe(400)
        expect(answer.body.error).toBe("validation_error")
      }
      const created = yield* post({ title: "Valid" })
      expect(created.status).toBe(201)
      const patch = yield* request(`${url}/1`, { method: "PATCH", token: repo.key, body: { state: "merged" } })
      expect(patch.status).toBe(400)
      expect((yield* request(`${url}?state=done`, { token: repo.key })).status).toBe(400)
      expect((yield* request(`${url}/abc`, { token: repo.key })).status).toBe(400)
      const empty = yield* request(`${url}/1/comments`, { method: "POST", token: repo.key, body: { body: "" } })
      expect(empty.status).toBe(400)

      expect((yield* request(`${url}/99`, { token: repo.key })).status).toBe(404)
      expect((yield* request(`${url}/99/comments`, { token: repo.key })).status).toBe(404)
      const missingComment = yield* request(`${url}/99/comments`, {
        method: "POST",
        token: repo.key,
        body: { body: "hello" }
      })
      expect(missingComment.status).toBe(404)
      expect((yield* request(`${baseUrl}/api/v1/code/repos/strict/nope/issues`, { token: repo.key })).status).toBe(
        404
      )

      const other = yield* bootstrapOrg(baseUrl, { slug: "strict-other" })
      for (const path of ["", "/1", "/1/comments"]) {
        const answer = yield* request(`${url}${path}`, { token: other.key })
        expect(answer.status).toBe(404)
        expect(answer.body.error).toBe("not_found")
      }
      expect((yield* post({ title: "Theirs" }, other.key)).status).toBe(404)
      const patched = yield* request(`${url}/1`, { method: "PATCH", token: other.key, body: { state: "closed" } })
      expect(patched.status).toBe(404)

      const reader = yield* bootstrapOrg(baseUrl, { slug: "strict-reader", scopes: ["code:read"] })
      const readerUrl = `${baseUrl}/api/v1/code/repos/strict-reader/r/issues`
      expect((yield* request(readerUrl, { method: "POST", token: reader.key, body: { title: "x" } })).status).toBe(403)
    }))

  it.effect("concurrent creations take distinct consecutive numbers", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const repo = yield* createRepo(baseUrl, { slug: "busy" })
      const created = yield* Effect.forEach(
        Array.from({ length: 12 }, (_, i) => i),
        (i) =>
          request(`${baseUrl}/api/v1/code/repos/busy/r/issues`, {
            method: "POST",
            token: repo.key,
            body: { title: `issue ${i}` }
          }),
        { concurrency: 12 }
      )
      expect(created.every((answer) => answer.status === 201)).toBe(true)
      expect(created.map((answer) => answer.body.number).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 12 }, (_, i) => i + 1)
      )
    }))
})
