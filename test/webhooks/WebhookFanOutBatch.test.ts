import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { MonitorStatusEvent } from "../../schemas/monitors/Monitors.ts"
import { publishAll } from "../../services/events/Events.ts"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { startReceiver } from "./receiver.ts"

/**
 * The batched paths end to end: one transaction of events fanned out by the batch consumer,
 * and successful attempts of several webhooks logged (and their next deliveries claimed)
 * together. Each webhook must still get every event once, in event order, one at a time.
 */
describe("webhook fan-out in batches", () => {
  it.live(
    "many events to several webhooks: each gets every event once, in order, on kept-alive connections",
    () =>
      Effect.gen(function*() {
        const HOOKS = 3
        const EVENTS = 40
        const receiver = yield* startReceiver()
        const app = yield* startApp()
        const { key, org } = yield* bootstrapOrg(app.baseUrl, { slug: "batches", plan: "enterprise" })
        for (let h = 0; h < HOOKS; h++) {
          const created = yield* request(`${app.baseUrl}/api/v1/webhooks`, {
            method: "POST",
            token: key,
            body: { url: receiver.url(`/hook${h}`), events: ["monitor.down"] }
          })
          expect(created.status).toBe(201)
        }

        const events = Array.from({ length: EVENTS }, (_, n) =>
          MonitorStatusEvent.make(org.id, {
            monitorId: `mon_${n}`,
            name: `Monitor ${n}`,
            status: "down",
            previousStatus: "up",
            timestamp: new Date().toISOString()
          }))
        yield* publishAll(events).pipe(Effect.provideService(SqlClient.SqlClient, app.sql))

        yield* eventually(
          "every delivery",
          Effect.sync(() => receiver.received.length),
          (n) => n >= HOOKS * EVENTS,
          { timeoutMs: 60_000 }
        )
        const expected = events.map((_, n) => `mon_${n}`)
        for (let h = 0; h < HOOKS; h++) {
          const bodies = receiver.on(`/hook${h}`).map((r) => JSON.parse(r.body.toString()).monitor.id)
          expect(bodies).toEqual(expected)
        }
        // Keep-alive: the sender asks to keep the connection (a new one per request says "close").
        expect(receiver.received.every((r) => r.headers.connection === "keep-alive")).toBe(true)
        // Every delivery succeeded on its first attempt, and each attempt is logged once. A batch's
        // successes are logged after its last request was answered: wait for that commit.
        const log = app.sql<{ deliveries: number; firstTry: number; attempts: number }>`
        SELECT count(*)::int AS deliveries, count(*) FILTER (WHERE status = 'success' AND attempts = 1)::int AS "firstTry",
          (SELECT count(*)::int FROM webhook_attempts) AS attempts
        FROM webhook_deliveries`.pipe(Effect.map((rows) => rows[0]))
        const logged = yield* eventually("every attempt logged", log, (row) => row.firstTry >= HOOKS * EVENTS, {
          timeoutMs: 30_000
        })
        expect(logged).toEqual({ deliveries: HOOKS * EVENTS, firstTry: HOOKS * EVENTS, attempts: HOOKS * EVENTS })
        // Nothing is left in the queue (one row per pending delivery).
        expect(yield* app.sql`SELECT seq FROM webhook_queue`).toEqual([])
        // Deliveries of one webhook were queued in event order.
        const queued = yield* app.sql<{ monitorId: string }>`
        SELECT payload::jsonb->'monitor'->>'id' AS "monitorId" FROM webhook_deliveries d
        JOIN webhooks w ON w.id = d.webhook_id WHERE w.url = ${receiver.url("/hook0")} ORDER BY d.seq`
        expect(queued.map((row) => row.monitorId)).toEqual(expected)
      }),
    90_000
  )
})
