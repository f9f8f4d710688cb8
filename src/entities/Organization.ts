import { Clock, Effect, Schedule, Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { SqlClient } from "effect/sql"
import { lease, type RateWindow } from "../../services/platform/RateWindow.ts"

export const LeaseResult = Schema.Struct({
  granted: Schema.Int,
  remaining: Schema.Int,
  reset: Schema.Int,
  used: Schema.Int,
  /** The runner hosting this organization's entity (for operators and the failover test). */
  runner: Schema.String
})
export type LeaseResult = typeof LeaseResult.Type

/** Take up to `want` requests of the current window; `want` 0 only reads the window. */
export const Lease = Rpc.make("Lease", {
  payload: { limit: Schema.Int, want: Schema.Int },
  success: LeaseResult
})

/** One entity per organization: the single authority on its request quota, whichever runner asks. */
export const Organization = Entity.make("Organization", [Lease])

/** How often a changed window is written back, so a new host resumes the count after a failover. */
const flushInterval = "200 millis"

export const OrganizationEntityLayer = Organization.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const runner = yield* Entity.CurrentRunnerAddress
    const sql = yield* SqlClient.SqlClient
    const orgId = address.entityId
    const runnerName = `${runner.host}:${runner.port}`

    const stored = yield* sql<{ window_start: number; used: number }>`
      SELECT window_start, used FROM org_rate_windows WHERE org_id = ${orgId}`.pipe(Effect.orDie)
    let window: RateWindow = stored.length > 0
      ? { start: Number(stored[0].window_start), used: stored[0].used }
      : { start: 0, used: 0 }
    let dirty = false

    const flush = Effect.suspend(() => {
      if (!dirty) return Effect.void
      dirty = false
      const { start, used } = window
      return sql`
        INSERT INTO org_rate_windows (org_id, window_start, used) VALUES (${orgId}, ${start}, ${used})
        ON CONFLICT (org_id) DO UPDATE SET window_start = EXCLUDED.window_start, used = EXCLUDED.used`.pipe(
        Effect.tapError(() => Effect.sync(() => dirty = true)),
        Effect.ignore
      )
    })
    yield* flush.pipe(Effect.repeat(Schedule.spaced(flushInterval)), Effect.forkScoped)
    yield* Effect.addFinalizer(() => flush)

    return Organization.of({
      Lease: ({ payload }) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const result = lease(window, now, payload.limit, payload.want)
          if (result.granted > 0 || result.window.start !== window.start) dirty = true
          window = result.window
          return {
            granted: result.granted,
            remaining: result.remaining,
            reset: result.reset,
            used: result.window.used,
            runner: runnerName
          }
        })
    })
  }),
  { maxIdleTime: "10 minutes" }
)
