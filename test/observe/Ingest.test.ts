import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import { gzipSync } from "node:zlib"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
import { errorEvent, ingest } from "./support.ts"

/** One app (fresh database, real cluster) for the file; each test makes its own organizations. */
class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly sql: SqlClient.SqlClient
}>()("test/observe/TestApp") {}

const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl, sql: app.sql })))

let orgCounter = 0
const newOrg = (options?: { plan?: string; scopes?: ReadonlyArray<string> }) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestApp
    const slug = `obs-${process.pid}-${++orgCounter}`
    const org = yield* bootstrapOrg(baseUrl, { slug, plan: options?.plan ?? "enterprise", ...options })
    return { ...org, slug }
  })

const api = (token: string, path: string, init?: { method?: string; body?: unknown }) =>
  Effect.flatMap(TestApp, ({ baseUrl }) => request(`${baseUrl}/api/v1/observe${path}`, { token, ...init }))

const send = (token: string, body: unknown) =>
  Effect.flatMap(TestApp, ({ baseUrl }) => ingest(baseUrl, body, { token }))

const storedEvents = (orgId: string) =>
  Effect.flatMap(
    TestApp,
    ({ sql }) =>
      sql<{ n: number }>`SELECT count(*)::int AS n FROM observe_events WHERE org_id = ${orgId}`.pipe(
        Effect.map((rows) => rows[0].n),
        Effect.orDie
      )
  )

layer(TestAppLive, { excludeTestServices: true, timeout: 120_000 })("observe ingestion", (it) => {
  it.effect("a single event is durable when answered 202 and readable by id, with its issue", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg()
      const response = yield* send(key, errorEvent({ release: "1.0.0", environment: "production", user: "u1" }))
      expect(response.status, JSON.stringify(response.body)).toBe(202)
      expect(response.body).toEqual({ id: expect.stringMatching(/^evt_/), status: "accepted" })

      // Answered after the commit: readable at once, no waiting.
      const event = yield* api(key, `/events/${response.body.id}`)
      expect(event.status).toBe(200)
      expect(event.body).toMatchObject({ id: response.body.id, level: "error", release: "1.0.0", sampleWeight: 1 })
      expect(event.body.data.tags).toEqual({ region: "eu" })
      expect(event.body.data.exception.stacktrace.frames.map((frame: any) => [frame.function, frame.lineno]))
        .toEqual([["main", 10], ["handle", 11]])

      const issue = yield* api(key, `/issues/${event.body.issueId}`)
      expect(issue.body).toMatchObject({
        title: "TypeError: Something broke",
        status: "unresolved",
        count: 1,
        users: 1,
        firstRelease: "1.0.0",
        lastRelease: "1.0.0",
        culprit: "handle (src/handler.js)"
      })
    }))

  it.effect("groups the same stack with other line numbers and numbers in the message; another function is another issue", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg()
      const batch = {
        events: [
          errorEvent({ message: "Order 1234 failed for 10.0.0.1", line: 10, user: "a" }),
          errorEvent({ message: "Order 98 failed for 10.0.0.7", line: 57, user: "b" }),
          errorEvent({ message: "Order 5 failed", line: 3, user: "a" }),
          errorEvent({ frames: [["main", "src/index.js"], ["other", "src/handler.js"]] })
        ]
      }
      const response = yield* send(key, batch)
      expect(response.status).toBe(202)
      expect(response.body).toEqual({ success: true, accepted: 4, message: "4 events accepted" })
      const issues = yield* api(key, "/issues?sort=count")
      expect(issues.body.count).toBe(2)
      expect(issues.body.issues.map((issue: any) => [issue.count, issue.users])).toEqual([[3, 2], [1, 0]])
      const events = yield* api(key, `/issues/${issues.body.issues[0].id}/events`)
      expect(events.body.count).toBe(3)
    }))

  it.effect("a custom fingerprint groups by its own parts; {{ default }} keeps the stack in it", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg()
      yield* send(key, {
        events: [
          errorEvent({ fingerprint: ["database-down"], frames: [["a", "a.js"]] }),
          errorEvent({ fingerprint: ["database-down"], frames: [["b", "b.js"]] }),
          errorEvent({ fingerprint: ["{{ default }}", "tenant-1"], frames: [["a", "a.js"]] }),
          errorEvent({ fingerprint: ["{{default}}", "tenant-2"], frames: [["a", "a.js"]] }),
          errorEvent({ fingerprint: ["{{ default }}", "tenant-1"], frames: [["a", "a.js"]], line: 99 })
        ]
      })
      const issues = yield* api(key, "/issues?sort=count")
      expect(issues.body.issues.map((issue: any) => issue.count)).toEqual([2, 2, 1])
    }))

  it.effect("a batch keeps its valid entries and lists the invalid ones by index", () =>
    Effect.gen(function*() {
      const { key, org } = yield* newOrg()
      const response = yield* send(key, {
        events: [errorEvent({}), { level: "error" }, errorEvent({}), { message: 42 }, { level: "span", message: "x" }]
      })
      expect(response.status).toBe(202)
      expect(response.body.accepted).toBe(2)
      expect(response.body.rejected.map((entry: any) => entry.index)).toEqual([1, 3, 4])
      expect(response.body.rejected[0].error).toMatch(/message/)
      expect(yield* storedEvents(org.id)).toBe(2)

      const none = yield* send(key, { events: [{ level: "error" }] })
      expect(none.status).toBe(400)
      expect(none.body.error).toBe("validation_error")
      expect(none.body.details[0].path).toBe("body.events.0")
      expect(yield* storedEvents(org.id)).toBe(2)
    }))

  it.effect("malformed bodies and oversized batches get a clear 4xx and store nothing", () =>
    Effect.gen(function*() {
      const { key, org } = yield* newOrg()
      const { baseUrl } = yield* TestApp
      const post = (body: string | Uint8Array, headers: Record<string, string>) =>
        Effect.promise(async () => {
          const response = await fetch(`${baseUrl}/api/v1/observe/ingest`, {
            method: "POST",
            headers: { authorization: `Bearer ${key}`, ...headers },
            body
          })
          return { status: response.status, body: await response.json() as any }
        })
      const notJson = yield* post("{nope", { "content-type": "application/json" })
      expect([notJson.status, notJson.body.error]).toEqual([400, "validation_error"])
      const array = yield* send(key, [errorEvent({})])
      expect(array.status).toBe(400)
      const single = yield* send(key, { level: "error" })
      expect([single.status, single.body.error]).toEqual([400, "validation_error"])
      expect(single.body.message).toMatch(/message/)
      const tooMany = yield* send(key, { events: Array.from({ length: 1001 }, () => ({ message: "x" })) })
      expect([tooMany.status, tooMany.body.message]).toEqual([400, expect.stringMatching(/1000/)])
      const wrongType = yield* post("message=x", { "content-type": "application/x-www-form-urlencoded" })
      expect([wrongType.status, wrongType.body.error]).toEqual([415, "unsupported_media_type"])
      const badGzip = yield* post("not gzip", { "content-type": "application/json", "content-encoding": "gzip" })
      expect(badGzip.status).toBe(400)

      // Over 10 MiB: refused as sent, and as a small gzip bomb that inflates past the limit.
      const huge = JSON.stringify({ message: "x".repeat(11 * 1024 * 1024) })
      const oversized = yield* post(huge, { "content-type": "application/json" })
      expect([oversized.status, oversized.body.error]).toEqual([413, "payload_too_large"])
      const bomb = gzipSync(huge)
      expect(bomb.length).toBeLessThan(1024 * 1024)
      const inflated = yield* post(bomb, { "content-type": "application/json", "content-encoding": "gzip" })
      expect([inflated.status, inflated.body.error]).toEqual([413, "payload_too_large"])
      expect(yield* storedEvents(org.id)).toBe(0)
    }))

  it.effect("gzip bodies are accepted; spans with epoch-ms timestamps are not issues", () =>
    Effect.gen(function*() {
      const { key, org } = yield* newOrg()
      const { baseUrl } = yield* TestApp
      const response = yield* ingest(baseUrl, {
        events: [
          errorEvent({ release: "2.0.0" }),
          {
            level: "span",
            message: "GET /users",
            timestamp: Date.now(),
            release: "2.0.0",
            span: { traceId: "t1", spanId: "s1", name: "GET /users", durationMs: 12.5, status: "error" }
          }
        ]
      }, { token: key, gzip: true })
      expect(response.status, JSON.stringify(response.body)).toBe(202)
      expect(response.body.accepted).toBe(2)
      expect(yield* storedEvents(org.id)).toBe(1)
      const issues = yield* api(key, "/issues")
      expect(issues.body.count).toBe(1)
      const release = yield* api(key, "/releases/2.0.0")
      expect(release.body).toMatchObject({ events: 1, errors: 1, spans: 1, errorSpans: 1, errorShare: 1, newIssues: 1 })
    }))

  it.effect("auth: DSN of another organization, missing scope and another organization's key are refused", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const a = yield* newOrg()
      const b = yield* newOrg()
      const readOnly = yield* newOrg({ scopes: ["observe:read"] })
      const event = errorEvent({})

      const viaDsn = yield* ingest(baseUrl, event, {
        headers: { "x-service-dsn": `https://${a.key}@localhost/${a.slug}` }
      })
      expect(viaDsn.status).toBe(202)
      const otherOrg = yield* ingest(baseUrl, event, {
        headers: { "x-service-dsn": `https://${a.key}@localhost/${b.slug}` }
      })
      expect([otherOrg.status, otherOrg.body.error]).toEqual([401, "unauthorized"])
      const garbage = yield* ingest(baseUrl, event, { headers: { "x-service-dsn": "not a dsn" } })
      expect(garbage.status).toBe(401)
      const none = yield* ingest(baseUrl, event)
      expect([none.status, none.body.error]).toEqual([401, "unauthorized"])
      const noScope = yield* ingest(baseUrl, event, { token: readOnly.key })
      expect([noScope.status, noScope.body.error]).toEqual([403, "forbidden"])
      expect(yield* storedEvents(readOnly.org.id)).toBe(0)
      expect(yield* storedEvents(b.org.id)).toBe(0)

      // Another organization's key reads none of a's issues or events.
      const issues = yield* api(a.key, "/issues")
      const issueId = issues.body.issues[0].id
      const eventId = viaDsn.body.id
      expect((yield* api(b.key, `/issues/${issueId}`)).status).toBe(404)
      expect((yield* api(b.key, `/issues/${issueId}/events`)).status).toBe(404)
      expect((yield* api(b.key, `/events/${eventId}`)).status).toBe(404)
      expect((yield* api(b.key, `/issues/${issueId}`, { method: "PATCH", body: { status: "resolved" } })).status)
        .toBe(404)
      expect((yield* api(b.key, "/issues")).body.count).toBe(0)
    }))

  it.effect("resolve, ignore and regression: a new event of a resolved issue reopens it", () =>
    Effect.gen(function*() {
      const { key, org } = yield* newOrg()
      const { sql } = yield* TestApp
      yield* send(key, errorEvent({ release: "1.0.0" }))
      const issueId = (yield* api(key, "/issues")).body.issues[0].id
      const resolved = yield* api(key, `/issues/${issueId}`, { method: "PATCH", body: { status: "resolved" } })
      expect(resolved.body).toMatchObject({ status: "resolved", resolvedAt: expect.any(String) })
      expect((yield* api(key, "/issues?status=resolved")).body.count).toBe(1)
      const invalid = yield* api(key, `/issues/${issueId}`, { method: "PATCH", body: { status: "closed" } })
      expect(invalid.status).toBe(400)

      yield* send(key, errorEvent({ release: "1.1.0" }))
      const regressed = yield* api(key, `/issues/${issueId}`)
      expect(regressed.body).toMatchObject({ status: "unresolved", resolvedAt: null, count: 2, lastRelease: "1.1.0" })
      const events = yield* sql<{ type: string }>`
        SELECT type FROM domain_events WHERE org_id = ${org.id} AND type LIKE 'observe.issue.%' ORDER BY id`
      expect(events.map((event) => event.type)).toEqual([
        "observe.issue.created",
        "observe.issue.updated",
        "observe.issue.regressed"
      ])

      yield* api(key, `/issues/${issueId}`, { method: "PATCH", body: { status: "ignored" } })
      yield* send(key, errorEvent({}))
      expect((yield* api(key, `/issues/${issueId}`)).body).toMatchObject({ status: "ignored", count: 3 })
    }))

  it.effect("known issues are updated in place with exact counters; one gone meanwhile is created again", () =>
    Effect.gen(function*() {
      const { key, org } = yield* newOrg()
      const { sql } = yield* TestApp
      yield* send(key, errorEvent({ release: "1.0.0", environment: "staging", user: "u1" }))
      const issueId = (yield* api(key, "/issues")).body.issues[0].id
      const first = (yield* api(key, `/issues/${issueId}`)).body
      // Known to the entity from here on: each commit updates the row by id.
      yield* send(key, {
        events: [
          errorEvent({ release: "1.1.0", environment: "production", user: "u1" }),
          errorEvent({ release: "1.2.0", user: "u2" }),
          { ...errorEvent({ user: "u3" }), level: "warning" }
        ]
      })
      yield* send(key, errorEvent({ release: "1.2.0", user: "u2" }))
      const updated = (yield* api(key, `/issues/${issueId}`)).body
      expect(updated).toMatchObject({
        count: 5,
        users: 3,
        level: "error",
        firstSeen: first.firstSeen,
        firstRelease: "1.0.0",
        lastRelease: "1.2.0"
      })
      expect(new Date(updated.lastSeen).getTime()).toBeGreaterThan(new Date(first.lastSeen).getTime())
      expect(updated.releases.toSorted()).toEqual(["1.0.0", "1.1.0", "1.2.0"])
      expect(updated.environments.toSorted()).toEqual(["production", "staging"])
      expect((yield* api(key, "/issues")).body.count).toBe(1)

      // Issues go only with their organization; should a known one vanish anyway, its next event recreates it.
      yield* sql`DELETE FROM observe_issues WHERE id = ${issueId}`.pipe(Effect.orDie)
      const again = yield* send(key, errorEvent({ release: "2.0.0", user: "u9" }))
      expect(again.status).toBe(202)
      expect((yield* api(key, `/issues/${issueId}`)).body).toMatchObject({
        count: 1,
        users: 1,
        firstRelease: "2.0.0",
        status: "unresolved"
      })
      expect(yield* storedEvents(org.id)).toBe(1)
      const created = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM domain_events WHERE org_id = ${org.id} AND type = 'observe.issue.created'`
        .pipe(Effect.orDie)
      expect(created[0].n).toBe(2)
    }))

  it.effect("issue filters and sorts", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg()
      yield* send(key, {
        events: [
          errorEvent({ type: "A", release: "1.0", environment: "production" }),
          { ...errorEvent({ type: "B", release: "2.0", environment: "staging" }), level: "warning" },
          errorEvent({ type: "B", release: "2.0", environment: "staging" })
        ]
      })
      const byRelease = yield* api(key, "/issues?release=1.0")
      expect(byRelease.body.issues.map((issue: any) => issue.type)).toEqual(["A"])
      const byEnv = yield* api(key, "/issues?environment=staging")
      expect(byEnv.body.issues.map((issue: any) => issue.type)).toEqual(["B"])
      expect((yield* api(key, "/issues?level=error")).body.count).toBe(2)
      expect((yield* api(key, "/issues?sort=count")).body.issues[0]).toMatchObject({ type: "B", count: 2 })
      const firstSeen = yield* api(key, "/issues?sort=firstSeen&limit=1")
      expect([firstSeen.body.issues.length, firstSeen.body.count]).toEqual([1, 2])
      expect((yield* api(key, "/issues?sort=nope")).status).toBe(400)
      const releases = yield* api(key, "/releases")
      expect(releases.body.releases.map((release: any) => [release.version, release.events, release.errors]).sort())
        .toEqual([["1.0", 1, 1], ["2.0", 2, 1]])
      expect((yield* api(key, "/releases/9.9")).status).toBe(404)
    }))

  it.effect("deleting an issue or an organization deletes its events (references kept by triggers, not foreign keys)", () =>
    Effect.gen(function*() {
      const { sql } = yield* TestApp
      const { key, org } = yield* newOrg()
      yield* send(key, { events: [errorEvent({ type: "A" }), errorEvent({ type: "A" }), errorEvent({ type: "B" })] })
      expect(yield* storedEvents(org.id)).toBe(3)
      const issues = (yield* api(key, "/issues")).body.issues
      const issueA = issues.find((issue: any) => issue.type === "A").id
      yield* sql`DELETE FROM observe_issues WHERE id = ${issueA}`.pipe(Effect.orDie)
      expect(yield* storedEvents(org.id)).toBe(1)
      yield* sql`DELETE FROM organizations WHERE id = ${org.id}`.pipe(Effect.orDie)
      expect(yield* storedEvents(org.id)).toBe(0)
    }))
})
