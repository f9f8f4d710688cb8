import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
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
})
