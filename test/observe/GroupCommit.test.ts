import { expect, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { errorEvent, ingest } from "./support.ts"

/**
 * The ingest entity's group commit under concurrency: requests of one organization that
 * arrive together are committed one batch at a time (each batch's events travel as typed
 * column arrays), and nothing is lost or counted twice on the way.
 */
class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly sql: SqlClient.SqlClient
}>()("test/observe/GroupCommit/TestApp") {}

const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl, sql: app.sql })))

const api = (token: string, path: string) =>
  Effect.flatMap(TestApp, ({ baseUrl }) => request(`${baseUrl}/api/v1/observe${path}`, { token }))

/** Event `n` of the burst: 3 issues (types), 2 releases, some without release, user or client id. */
const burstEvent = (n: number) => {
  const event = errorEvent({
    type: ["A", "B", "C"][n % 3],
    message: `broke ${n}`,
    ...(n % 4 === 3 ? {} : { release: n % 2 === 0 ? "1.0" : "2.0", environment: "production" }),
    ...(n % 5 === 0 ? {} : { user: `user-${n % 7}` })
  })
  return n % 6 === 0 ? { ...event, event_id: `client-${n}` } : event
}

layer(TestAppLive, { excludeTestServices: true, timeout: 120_000 })("ingest group commit", (it) => {
  it.effect("concurrent batches and single events are all stored once, with exact counters", () =>
    Effect.gen(function*() {
      const { baseUrl, sql } = yield* TestApp
      const { key, org } = yield* bootstrapOrg(baseUrl, { slug: `gc-${process.pid}`, plan: "enterprise" })
      // 30 requests at once: every third a batch of 10, the others single events (120 events).
      const bodies = Array.from({ length: 30 }, (_, r) =>
        r % 3 === 0
          ? { events: Array.from({ length: 10 }, (_, i) => burstEvent(r * 10 + i)) }
          : burstEvent(r * 10))
      const responses = yield* Effect.forEach(bodies, (body) => ingest(baseUrl, body, { token: key }), {
        concurrency: "unbounded"
      })
      expect(responses.map((response) => response.status)).toEqual(bodies.map(() => 202))
      const sent = bodies.flatMap((body) => "events" in body ? body.events : [body])
      expect(sent.length).toBe(120)

      // Answered after their commits: everything is there at once.
      const stored = yield* sql<{ n: number; ids: number }>`
        SELECT count(*)::int AS n, count(DISTINCT id)::int AS ids FROM observe_events WHERE org_id = ${org.id}`.pipe(
        Effect.orDie
      )
      expect(stored[0]).toEqual({ n: 120, ids: 120 })

      const expectedCounts = (type: string) => sent.filter((event) => event.exception.type === type).length
      const issues = (yield* api(key, "/issues?sort=count")).body.issues
      expect(issues.map((issue: any) => [issue.type, issue.count]).sort()).toEqual(
        ["A", "B", "C"].map((type) => [type, expectedCounts(type)])
      )
      for (const issue of issues) {
        const users = new Set(
          sent.filter((event) => event.exception.type === issue.type && "user" in event)
            .map((event) => (event as { user: { id: string } }).user.id)
        )
        expect(issue.users).toBe(users.size)
        const events = yield* api(key, `/issues/${issue.id}/events?limit=100`)
        expect(events.body.count).toBe(issue.count)
      }
      // lastSeen order (no index behind it any more) still sorts newest first.
      const byLastSeen = (yield* api(key, "/issues")).body.issues.map((issue: any) => issue.lastSeen)
      expect(byLastSeen).toEqual([...byLastSeen].sort().reverse())

      const releases = (yield* api(key, "/releases")).body.releases
      const inRelease = (version: string) => sent.filter((event) => event.release === version).length
      expect(releases.map((release: any) => [release.version, release.events]).sort()).toEqual([
        ["1.0", inRelease("1.0")],
        ["2.0", inRelease("2.0")]
      ])

      // Nullable columns went through as nulls, values as values.
      const withClientId = sent.find((event) => "event_id" in event) as { event_id: string; message: string }
      const byClientId = yield* api(key, `/events/${withClientId.event_id}`)
      expect(byClientId.status).toBe(200)
      expect(byClientId.body).toMatchObject({ eventId: withClientId.event_id, message: withClientId.message })
      const withoutRelease = yield* sql<{ release: string | null; environment: string | null; event_id: null }>`
        SELECT release, environment, event_id FROM observe_events
        WHERE org_id = ${org.id} AND message = ${"broke 3"}`.pipe(Effect.orDie)
      expect(withoutRelease).toEqual([{ release: null, environment: null, event_id: null }])
    }))

  // A commit without spans is one statement run without BEGIN/COMMIT (its own transaction);
  // with spans, the statement and the spans share a transaction. Either way a failure at the
  // statement's end (the releases, written after events, issues and domain events) leaves nothing.
  it.effect("a failed commit leaves nothing written, with or without spans; domain events only when issues open", () =>
    Effect.gen(function*() {
      const { baseUrl, sql } = yield* TestApp
      const { key, org } = yield* bootstrapOrg(baseUrl, { slug: `gc-fail-${process.pid}`, plan: "enterprise" })
      const span = {
        level: "span",
        message: "GET /poison",
        timestamp: Date.now(),
        release: "poison",
        span: { traceId: "t-poison", spanId: "s-poison", name: "GET /poison", durationMs: 3, status: "ok" }
      }
      const stored = Effect.gen(function*() {
        const [row] = yield* sql<{ events: number; issues: number; releases: number; stacks: number; spans: number }>`
          SELECT (SELECT count(*)::int FROM observe_events WHERE org_id = ${org.id}) AS events,
            (SELECT count(*)::int FROM observe_issues WHERE org_id = ${org.id}) AS issues,
            (SELECT count(*)::int FROM observe_releases WHERE org_id = ${org.id}) AS releases,
            (SELECT count(*)::int FROM observe_stacks WHERE org_id = ${org.id}) AS stacks,
            (SELECT count(*)::int FROM spans WHERE org_id = ${org.id}) AS spans`
        const published = yield* sql<{ type: string }>`
          SELECT type FROM domain_events WHERE org_id = ${org.id} AND type LIKE 'observe.issue.%' ORDER BY id`
        return { ...row, published: published.map((event) => event.type) }
      }).pipe(Effect.orDie)
      const nothing = { events: 0, issues: 0, releases: 0, stacks: 0, spans: 0, published: [] }

      // Refuses release "poison"; each refused attempt takes a number (sequences ignore rollbacks).
      yield* sql`CREATE SEQUENCE gc_test_attempts`.pipe(Effect.orDie)
      yield* sql`ALTER TABLE observe_releases ADD CONSTRAINT gc_test_poison
        CHECK (version <> 'poison' OR nextval('gc_test_attempts') < 0) NOT VALID`.pipe(Effect.orDie)
      const attempts = sql<{ n: string }>`SELECT last_value AS n FROM gc_test_attempts`.pipe(
        Effect.map((rows) => Number(rows[0].n)),
        Effect.orDie
      )
      const poisoned = [
        errorEvent({ type: "A", release: "ok" }),
        errorEvent({ type: "B", release: "ok", user: "u1" }),
        errorEvent({ type: "C", release: "poison" })
      ]
      // Failed commits are retried (the request waits); none of their attempts leaves a row.
      const first = yield* Effect.forkChild(ingest(baseUrl, { events: poisoned }, { token: key }))
      yield* eventually("attempts of the commit without spans", attempts, (n) => n >= 3, { timeoutMs: 30_000 })
      expect(yield* stored).toEqual(nothing)
      const second = yield* Effect.forkChild(ingest(baseUrl, { events: [...poisoned, span] }, { token: key }))
      const before = yield* attempts
      yield* eventually("attempts with spans", attempts, (n) => n >= before + 3, { timeoutMs: 30_000 })
      expect(yield* stored).toEqual(nothing)

      yield* sql`ALTER TABLE observe_releases DROP CONSTRAINT gc_test_poison`.pipe(Effect.orDie)
      // The retries land whole, counted once; each created issue is published once.
      expect((yield* Fiber.join(first)).status).toBe(202)
      expect((yield* Fiber.join(second)).status).toBe(202)
      expect(yield* stored).toMatchObject({ events: 6, issues: 3, releases: 2, stacks: 1, spans: 1 })
      expect((yield* ingest(baseUrl, { events: poisoned }, { token: key })).status).toBe(202)
      expect(yield* stored).toEqual({
        events: 9,
        issues: 3,
        releases: 2,
        stacks: 1,
        spans: 1,
        published: ["observe.issue.created", "observe.issue.created", "observe.issue.created"]
      })
      const counts = (yield* api(key, "/issues?sort=count")).body.issues.map((issue: any) => [issue.type, issue.count])
      expect(counts.sort()).toEqual([["A", 3], ["B", 3], ["C", 3]])
    }))
})
