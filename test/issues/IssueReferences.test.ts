import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { it as plain } from "vitest"
import { Repositories } from "../../services/git/Repositories.ts"
import { closeReferenced, closingReferences } from "../../services/issues/IssueReferences.ts"
import { createRepo } from "../git/gitClient.ts"
import { request, startApp } from "../support/app.ts"

describe("closingReferences (pure)", () => {
  plain("finds every closing keyword in any case, once per number, in order", () => {
    expect(closingReferences([
      "Fixes #1, fixed #2 and FIX #3",
      "closes #4\nClosed #5 close #6",
      "Resolves #7; resolved #8 (resolve #9)",
      "fixes: #10",
      "also fixes #1 again"
    ])).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
  })
  plain("ignores mentions without a keyword, other words and malformed numbers", () => {
    expect(closingReferences([
      "See #1, refs #2",
      "prefixes #3, fixing #4, unresolved #5",
      "Fixes#6, fixes # 7, fixes #8abc, fixes #0",
      "fixes org/repo#9"
    ])).toEqual([])
  })
})

type Services = Repositories | SqlClient.SqlClient
class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly context: Context.Context<Services>
}>()("test/issues/IssueReferencesApp") {}
const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl, context: app.context as any }))
)

layer(TestAppLive, { excludeTestServices: true, timeout: "120 seconds" })("closeReferenced", (it) => {
  it.effect("closes the open issues referenced, records the pull request and publishes issue.closed", () =>
    Effect.gen(function*() {
      const { baseUrl, context } = yield* TestApp
      const repo = yield* createRepo(baseUrl, { slug: "refs" })
      const api = (path: string, init?: { method?: string; body?: unknown }) =>
        request(`${baseUrl}/api/v1/code/repos/refs/r${path}`, { ...init, token: repo.key })
      for (const title of ["one", "two", "three", "four"]) {
        expect((yield* api("/issues", { method: "POST", body: { title } })).status).toBe(201)
      }
      yield* api("/issues/3", { method: "PATCH", body: { state: "closed" } })

      const closed = yield* Effect.provide(
        Effect.gen(function*() {
          const record = Option.getOrThrow(yield* (yield* Repositories).find("refs", "r"))
          return yield* closeReferenced({
            repo: record,
            texts: ["Fix the crash", "Fixes #1 and closes #3", "Resolves #2\n\nresolves #42"],
            pullRequest: { id: "pr_test", number: 5 },
            actor: { id: repo.user.id, name: "Merger" }
          })
        }),
        context
      )
      expect(closed).toEqual([1, 2])
      const one = (yield* api("/issues/1")).body
      expect(one).toMatchObject({
        state: "closed",
        closedBy: { id: "pr_test", number: 5 },
        closedAt: expect.any(String)
      })
      expect((yield* api("/issues/2")).body.closedBy).toEqual({ id: "pr_test", number: 5 })
      expect((yield* api("/issues/3")).body.closedBy).toBeNull()
      expect((yield* api("/issues/4")).body.state).toBe("open")

      const events = yield* Effect.provide(
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          return yield* sql<{ data: any }>`
            SELECT data FROM domain_events WHERE type = 'issue.closed' AND data->'repository'->>'id' = ${repo.id}
            ORDER BY id`
        }),
        context
      ).pipe(Effect.orDie)
      expect(events.map((e) => [e.data.issue.number, e.data.issue.closedBy, e.data.sender])).toEqual([
        [3, null, expect.objectContaining({ id: repo.user.id })],
        [1, { id: "pr_test", number: 5 }, { id: repo.user.id, name: "Merger" }],
        [2, { id: "pr_test", number: 5 }, { id: repo.user.id, name: "Merger" }]
      ])
    }))
})
