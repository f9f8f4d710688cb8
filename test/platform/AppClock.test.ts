import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"

/**
 * The harness runs the app on the real clock, also from an `it.effect` test (TestClock, which
 * nothing moves here). Seen before: every timer of the app waited on the frozen TestClock; under
 * load a shard release failed, its retry slept 50 ms on that clock, and stopping the app never
 * completed.
 */
it.effect(
  "an app started under the TestClock runs its timers in real time and stops",
  () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      // The cluster's runner refreshes its shard locks (and its heartbeat) every 2 seconds.
      const heartbeat = app.sql<{ at: string }>`SELECT max(last_heartbeat)::text AS at FROM cluster_runners`.pipe(
        Effect.map((rows) => rows[0]?.at ?? ""),
        Effect.orDie
      )
      const first = yield* heartbeat
      yield* eventually("a later heartbeat", heartbeat, (at) => at !== first, { timeoutMs: 30_000 })
      // A real-time deadline: a timeout on the TestClock would never fire either.
      const stopped = yield* TestClock.withLive(app.stop.pipe(Effect.timeoutOption("60 seconds")))
      expect(stopped._tag).toBe("Some")
    }),
  { timeout: 120_000 }
)
