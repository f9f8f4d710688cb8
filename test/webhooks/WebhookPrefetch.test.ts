import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { MonitorStatusEvent } from "../../schemas/monitors/Monitors.ts"
import { publishAll } from "../../services/events/Events.ts"
import { bootstrapOrg, request, startAppOnDatabase } from "../support/app.ts"
import { createTestDatabase } from "../support/database.ts"
import { eventually } from "../support/wait.ts"
import { claimTime } from "./claimTime.ts"
import { startReceiver } from "./receiver.ts"

/**
 * Deliveries claimed in batches (`Dispatcher.PREFETCH`): a webhook stopped in the middle of a
 * batch gives back the claims it never started, so after a restart those go out at once as
 * attempt 1, in order, while the one that was in flight keeps its claim and is retried on
 * schedule. Real app, real receiver, a real restart.
 */

const EVENTS = 5

const downEvent = (orgId: string, i: number) =>
  MonitorStatusEvent.make(orgId, {
    monitorId: `mon_prefetch_${i}`,
    name: `Monitor ${i}`,
    status: "down",
    previousStatus: "up",
    timestamp: new Date().toISOString()
  })

/** A temporary data folder shared by two app lifetimes (the master key must survive the restart). */
const sharedDataDir = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-webhooks-"))),
  (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
)

const monitorOf = (body: Buffer) => (JSON.parse(body.toString()) as { monitor: { id: string } }).monitor.id

describe("webhook deliveries claimed in batches", () => {
  it.live(
    "a stop mid-batch gives back the unsent claims; the one in flight is retried on schedule",
    () =>
      Effect.gen(function*() {
        // The first request never gets an answer: the runner stops while waiting for it.
        const receiver = yield* startReceiver((_, index) => index === 0 ? "hang" : 200)
        const databaseUrl = yield* createTestDatabase
        const dataDir = yield* sharedDataDir
        const first = yield* startAppOnDatabase(databaseUrl, { dataDir })
        const { key, org } = yield* bootstrapOrg(first.baseUrl, { slug: "prefetch", plan: "enterprise" })
        const created = yield* request(`${first.baseUrl}/api/v1/webhooks`, {
          method: "POST",
          token: key,
          body: { url: receiver.url(), events: ["monitor.down"], retryIntervalSeconds: 10 }
        })
        expect(created.status).toBe(201)
        const hookId = created.body.id as string

        // One transaction: the fan-out queues all five together, so one claim takes them all.
        yield* publishAll(Array.from({ length: EVENTS }, (_, i) => downEvent(org.id, i))).pipe(
          Effect.provideService(SqlClient.SqlClient, first.sql)
        )
        yield* eventually("the first attempt in flight", Effect.sync(() => receiver.received.length), (n) => n === 1)
        const claimed = yield* first.sql<{ claimed: number }>`
        SELECT count(*)::int AS claimed FROM webhook_deliveries WHERE webhook_id = ${hookId} AND attempts = 1`
        expect(claimed[0].claimed).toBe(EVENTS)
        const claimedAt = yield* claimTime(first.sql, hookId)
        const stopStarted = Date.now()
        yield* first.stop
        // The entity's Drain is interrupted when the stop begins and gives the hanging request a
        // short grace (`STOP_GRACE_MS`): the stop is not held for the cluster's 15 s termination timeout.
        expect(Date.now() - stopStarted).toBeLessThan(12_000)

        // Given back: only the delivery in flight still holds its claim.
        const probe = Context.get(
          yield* Layer.build(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 })),
          SqlClient.SqlClient
        )
        const afterStop = yield* probe<{ attempts: number }>`
        SELECT attempts FROM webhook_deliveries WHERE webhook_id = ${hookId} ORDER BY seq`
        expect(afterStop.map((row) => row.attempts)).toEqual([1, 0, 0, 0, 0])

        const second = yield* startAppOnDatabase(databaseUrl, { dataDir })
        const rows = yield* eventually(
          "every delivery after the restart",
          second.sql<{ status: string; attempts: number }>`
          SELECT status, attempts FROM webhook_deliveries WHERE webhook_id = ${hookId} ORDER BY seq`,
          (rows) => rows.every((row) => row.status === "success"),
          { timeoutMs: 45_000 }
        )
        // The given-back ones went out as attempt 1, in order; the one in flight got attempt 2
        // after its retry interval (before them only if the restart took that long), never
        // attempt 1 twice.
        expect(rows.map((row) => row.attempts)).toEqual([2, 1, 1, 1, 1])
        const after = receiver.received.slice(1).map((received) => ({ id: monitorOf(received.body), at: received.at }))
        expect(after.filter((received) => received.id !== "mon_prefetch_0").map((received) => received.id)).toEqual([
          "mon_prefetch_1",
          "mon_prefetch_2",
          "mon_prefetch_3",
          "mon_prefetch_4"
        ])
        const retried = after.filter((received) => received.id === "mon_prefetch_0")
        expect(retried).toHaveLength(1)
        // Its claim lapses retryIntervalSeconds × 1 after it was taken (the receiver saw it a little later).
        expect(retried[0].at).toBeGreaterThanOrEqual(claimedAt + 10_000)
      }),
    90_000
  )
})
