import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { BranchRules } from "../../services/pulls/BranchRules.ts"
import { createRepo } from "../git/gitClient.ts"
import { adminToken, request, startApp } from "../support/app.ts"
import { addMember } from "./support.ts"

class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly sql: SqlClient.SqlClient
  readonly context: Context.Context<never>
}>()("test/protection/StatusesApp") {}
const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(
    startApp(),
    (app) => ({ baseUrl: app.baseUrl, sql: app.sql, context: app.context as Context.Context<never> })
  )
)

let counter = 0

layer(TestAppLive, { excludeTestServices: true, timeout: "180 seconds" })("Commit statuses", (it) => {
  it.effect("reports statuses per context; the latest per context is what merge checks read", () =>
    Effect.gen(function*() {
      const { baseUrl, context, sql } = yield* TestApp
      const repo = yield* createRepo(baseUrl, { slug: `cs-${process.pid}-${++counter}` })
      const sha = "0123456789abcdef0123456789abcdef01234567"
      const base = `${baseUrl}/api/v1/code/repos/${repo.slug}/${repo.name}`
      const report = (body: object) => request(`${base}/statuses/${sha}`, { method: "POST", token: repo.key, body })
      const rules = Context.get(context, BranchRules)
      const latest = () => Effect.map(rules.latestStatuses(repo.id, sha), (map) => Object.fromEntries(map))

      expect(yield* latest()).toEqual({})
      const pending = yield* report({
        state: "pending",
        context: "ci/test",
        description: "running",
        targetUrl: "https://ci.example.com/1"
      })
      expect(pending.status).toBe(201)
      expect(pending.body).toMatchObject({
        sha,
        state: "pending",
        context: "ci/test",
        description: "running",
        targetUrl: "https://ci.example.com/1",
        creator: `${repo.slug}-owner`
      })
      expect(pending.body.id).toMatch(/^status_/)
      expect(yield* latest()).toEqual({ "ci/test": "pending" })

      for (const state of ["failure", "error", "success"] as const) {
        expect((yield* report({ state, context: "ci/test" })).status).toBe(201)
        expect(yield* latest()).toEqual({ "ci/test": state })
      }
      yield* report({ state: "failure", context: "ci/lint" })
      yield* report({ state: "success" })
      expect(yield* latest()).toEqual({ "ci/test": "success", "ci/lint": "failure", default: "success" })

      const listed = yield* request(`${base}/commits/${sha}/statuses`, { token: repo.key })
      expect(listed.status).toBe(200)
      expect(listed.body.count).toBe(6)
      expect(listed.body.state).toBe("failure")
      expect(listed.body.statuses.map((s: any) => `${s.context}:${s.state}`)).toEqual([
        "default:success",
        "ci/lint:failure",
        "ci/test:success",
        "ci/test:error",
        "ci/test:failure",
        "ci/test:pending"
      ])
      yield* report({ state: "success", context: "ci/lint" })
      expect((yield* request(`${base}/commits/${sha}/statuses`, { token: repo.key })).body.state).toBe("success")

      // Each report publishes commit_status (in its transaction) for the pull requests with that head.
      const events = yield* sql<{ data: any }>`
        SELECT data FROM domain_events WHERE type = 'commit_status' AND org_id = ${repo.org.id} ORDER BY id`.pipe(
        Effect.orDie
      )
      expect(events.map((e) => `${e.data.context}:${e.data.state}`)).toEqual([
        "ci/test:pending",
        "ci/test:failure",
        "ci/test:error",
        "ci/test:success",
        "ci/lint:failure",
        "default:success",
        "ci/lint:success"
      ])
      expect(events[0].data).toEqual({ repoId: repo.id, sha, context: "ci/test", state: "pending" })

      // Statuses of another commit are their own.
      expect(yield* Effect.map(rules.latestStatuses(repo.id, "f".repeat(40)), (m) => m.size)).toBe(0)
    }))

  it.effect("validates the body and the sha; reporting needs code:write", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const repo = yield* createRepo(baseUrl, { slug: `cv-${process.pid}-${++counter}` })
      const base = `${baseUrl}/api/v1/code/repos/${repo.slug}/${repo.name}`
      const sha = "a".repeat(40)
      for (
        const [path, body] of [
          [`statuses/${sha}`, { state: "done", context: "ci" }],
          [`statuses/${sha}`, { context: "ci" }],
          [`statuses/${sha}`, { state: "success", context: "" }],
          [`statuses/${sha}`, { state: "success", extra: 1 }],
          ["statuses/abc", { state: "success" }],
          [`statuses/${"A".repeat(40)}`, { state: "success" }]
        ] as const
      ) {
        const response = yield* request(`${base}/${path}`, { method: "POST", token: repo.key, body })
        expect([path, JSON.stringify(body), response.status, response.body.error]).toEqual([
          path,
          JSON.stringify(body),
          400,
          "validation_error"
        ])
      }
      const reader = yield* addMember(baseUrl, repo.slug, `rd-${repo.slug}`)
      const readOnly = yield* request(`${baseUrl}/api/v1/admin/orgs/${repo.slug}/keys`, {
        method: "POST",
        token: adminToken,
        body: { username: reader.username, scopes: ["code:read"] }
      })
      const refused = yield* request(`${base}/statuses/${sha}`, {
        method: "POST",
        token: readOnly.body.key,
        body: { state: "success" }
      })
      expect(refused.status).toBe(403)
      expect((yield* request(`${base}/commits/${sha}/statuses`, { token: readOnly.body.key })).status).toBe(200)
    }))
})
