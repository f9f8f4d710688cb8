import { Clock, Effect, Layer, Option, Schedule } from "effect"
import { Entity } from "effect/cluster"
import { Organization } from "../../../services/ratelimits/OrganizationProtocol.ts"
import { lease, type RateWindow } from "../../../services/ratelimits/RateWindow.ts"
import { RateWindows } from "../../../services/ratelimits/RateWindows.ts"

/** How often a changed window is written back, so a new host resumes the count after a failover. */
const flushInterval = "200 millis"

export const OrganizationEntityLayer = Organization.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const runner = yield* Entity.CurrentRunnerAddress
    const windows = yield* RateWindows
    const orgId = address.entityId
    const runnerName = `${runner.host}:${runner.port}`

    let window: RateWindow = Option.getOrElse(
      yield* windows.load(orgId).pipe(Effect.orDie),
      () => ({ start: 0, used: 0 })
    )
    let dirty = false

    const flush = Effect.suspend(() => {
      if (!dirty) return Effect.void
      dirty = false
      return windows.save(orgId, window).pipe(
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
).pipe(Layer.provide(RateWindows.layer))
