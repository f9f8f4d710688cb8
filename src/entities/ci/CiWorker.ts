import { PgClient } from "@effect/sql-pg"
import { Cause, Config, Deferred, Duration, Effect, Layer, Queue } from "effect"
import { SqlClient } from "effect/sql"
import { CI_CHANNEL, claimRun, heartbeat, lostRuns } from "../../../services/ci/CiRunRows.ts"
import { Executor } from "../../../services/ci/Executor.ts"
import { RunExecution } from "../../../services/ci/RunExecution.ts"
import { makeId } from "../../../services/platform/Ids.ts"

const HEARTBEAT_EVERY = Duration.seconds(1)
const SWEEP_EVERY = Duration.seconds(5)
const POLL_EVERY = Duration.seconds(1)

const restartOnFailure = (message: string) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  self.pipe(
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause)
        : Effect.logWarning(message, cause).pipe(Effect.andThen(Effect.sleep("1 second")))
    ),
    Effect.forever
  )

/**
 * The CI worker of this runner (GUIDE §14), on runners started with `CI_WORKER=true` (the
 * default): it claims queued runs from Postgres (oldest first, at most the plan's concurrency
 * per organization cluster-wide, at most `CI_WORKER_SLOTS` on this runner), woken by
 * `NOTIFY canopy_ci` and a poll, and executes them. While a run executes, its heartbeat
 * (every second) keeps it owned and reads cancel requests. Every runner also sweeps runs whose
 * runner went silent for `CI_RUNNER_LOST_SECONDS` (default 30) to `error` ("Runner lost").
 * The queue is the table, so a restart loses no queued run.
 */
export const CiWorker = Layer.effectDiscard(Effect.gen(function*() {
  const enabled = yield* Config.Boolean("CI_WORKER").pipe(Config.withDefault(true))
  const slots = yield* Config.Int("CI_WORKER_SLOTS").pipe(Config.withDefault(5))
  const lostAfter = yield* Config.Int("CI_RUNNER_LOST_SECONDS").pipe(Config.withDefault(30))
  const sql = yield* SqlClient.SqlClient
  const pg = yield* PgClient.PgClient
  const execution = yield* RunExecution
  const executor = yield* Executor

  yield* Effect.andThen(
    Effect.flatMap(
      lostRuns(sql, lostAfter),
      (ids) =>
        Effect.forEach(ids, (id) => execution.abandon(id, "Runner lost: the job's runner stopped answering"), {
          discard: true
        })
    ),
    Effect.sleep(SWEEP_EVERY)
  ).pipe(Effect.forever, restartOnFailure("CI: runner-lost sweep failed"), Effect.forkScoped)

  if (!enabled) return
  if (!executor.available) {
    yield* Effect.logWarning("CI: bubblewrap, prlimit or setpriv missing: this runner runs no CI jobs")
    return
  }

  const runner = makeId("runner")
  const active = new Map<string, Deferred.Deferred<void>>()
  const wake = yield* Queue.sliding<void>(1)

  yield* Effect.scoped(Effect.gen(function*() {
    const notifications = yield* pg.listen(CI_CHANNEL)
    while (true) {
      yield* Queue.take(notifications)
      yield* Queue.offer(wake, undefined)
    }
  })).pipe(restartOnFailure("CI: LISTEN failed, reconnecting"), Effect.forkScoped)

  yield* Effect.andThen(
    Effect.suspend(() => {
      // Only runs held before the heartbeat's query: one claimed meanwhile is not in its answer.
      const before = [...active.entries()]
      return Effect.flatMap(heartbeat(sql, runner), (held) =>
        // Cancelled, or no longer ours (swept as lost after a long pause): stop the job.
        Effect.forEach(before, ([id, signal]) =>
          held.get(id) === false ? Effect.void : Deferred.succeed(signal, undefined), { discard: true }))
    }),
    Effect.sleep(HEARTBEAT_EVERY)
  ).pipe(Effect.forever, restartOnFailure("CI: heartbeat failed"), Effect.forkScoped)

  const claimAll = Effect.gen(function*() {
    while (active.size < slots) {
      const claimed = yield* claimRun(sql, runner)
      if (claimed === undefined) return
      const cancelled = yield* Deferred.make<void>()
      active.set(claimed.id, cancelled)
      yield* execution.execute(claimed, cancelled).pipe(
        Effect.ensuring(Effect.andThen(
          Effect.sync(() => active.delete(claimed.id)),
          Queue.offer(wake, undefined)
        )),
        Effect.forkScoped
      )
    }
  })

  yield* Effect.andThen(claimAll, Queue.take(wake).pipe(Effect.timeoutOption(POLL_EVERY))).pipe(
    Effect.forever,
    restartOnFailure("CI: claiming runs failed"),
    Effect.forkScoped
  )
}))
