import { Cause, Config, Context, Deferred, Duration, Effect, Exit, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { CiQueue } from "../../../services/ci/CiQueueProtocol.ts"
import { claimRun, heartbeat, type RunRow } from "../../../services/ci/CiRunRows.ts"
import { RunExecution } from "../../../services/ci/RunExecution.ts"
import { ciWorkerRole } from "../../../services/ci/WorkerRole.ts"
import { AppConfig } from "../../../services/platform/AppConfig.ts"
import { makeId } from "../../../services/platform/Ids.ts"
import { restartOnFailure } from "../../../services/platform/RestartOnFailure.ts"

const HEARTBEAT_EVERY = Duration.seconds(1)
/** A wake-up that gets no answer in this time is dropped: the `ci` sweep wakes the organization again. */
const WAKE_TIMEOUT = Duration.seconds(10)

/**
 * The runs executing on this runner (GUIDE §14), outside any entity: a run takes minutes,
 * an organization's `CiQueue` entity only claims runs and hands them over here. At most
 * `CI_WORKER_SLOTS` (default 5) runs at once on this runner; while runs execute, a heartbeat
 * (every second) keeps them owned (`ci_runs.runner`, `heartbeat_at`) and reads cancel
 * requests. A finished run wakes its organization's queue and the organizations that were
 * turned away for want of a slot here. Only on runners whose `ciWorkerRole` executes (the
 * ones holding `ci` shards); elsewhere `claim` starts nothing.
 */
export class CiExecutions extends Context.Service<CiExecutions, {
  /** Whether this runner executes CI jobs (`CI_WORKER` and the sandbox's tools). */
  readonly executes: boolean
  /** Claims the organization's claimable runs while this runner has free slots and starts them; answers how many. */
  readonly claim: (orgId: string) => Effect.Effect<number>
  /**
   * Sends `Wake` to the organization's queue, wherever it lives; an answer that does not come
   * within 10 s is given up (the `ci` sweep wakes the organization again).
   */
  readonly wake: (orgId: string) => Effect.Effect<void>
}>()("canopy/ci/CiExecutions") {
  static readonly layer = Layer.effect(
    CiExecutions,
    Effect.gen(function*() {
      const role = yield* Effect.orDie(ciWorkerRole)
      const slots = yield* Effect.orDie(Config.Int("CI_WORKER_SLOTS").pipe(Config.withDefault(5)))
      const sql = yield* SqlClient.SqlClient
      const execution = yield* RunExecution
      const config = yield* AppConfig
      const makeClient = yield* CiQueue.client
      const scope = yield* Effect.scope
      const address = Option.match(config.runnerAddress, {
        onNone: () => "single",
        onSome: ({ host, port }) => `${host}:${port}`
      })
      // `ci_runs.runner`, fresh per start: a restarted runner never keeps the runs of its previous life alive.
      const runner = `${makeId("runner")}@${address}`
      /** Running here, with the signal that stops each (a cancel request, or the run no longer ours). */
      const active = new Map<string, Deferred.Deferred<void>>()
      /** Slots taken: running plus claims in flight, so concurrent claims never overfill. */
      let taken = 0
      /** Organizations that had a claimable run when every slot here was taken. */
      const waiting = new Set<string>()

      if (role.requested && !role.executes) {
        yield* Effect.logWarning("CI: bubblewrap, prlimit, setpriv or tar missing: this runner takes no CI work")
      }

      const wake = (orgId: string) =>
        makeClient(orgId).Wake(undefined).pipe(
          Effect.timeout(WAKE_TIMEOUT),
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.failCause(cause as Cause.Cause<never>)
              : Effect.logDebug("CI: a queue wake-up failed (the next sweep retries)", cause)
          ),
          Effect.asVoid
        )

      /** After a run: its organization may start the next one, and so may those waiting for a slot here. */
      const afterRun = (orgId: string) =>
        Effect.suspend(() => {
          const orgs = new Set([orgId, ...waiting])
          waiting.clear()
          return Effect.forEach(orgs, wake, { discard: true })
        })

      const start = (claimed: RunRow) =>
        Effect.gen(function*() {
          const cancelled = yield* Deferred.make<void>()
          active.set(claimed.id, cancelled)
          yield* execution.execute(claimed, cancelled).pipe(
            Effect.onExit((exit) =>
              Effect.suspend(() => {
                active.delete(claimed.id)
                taken--
                // Stopping (interrupted with the runner): nothing to hand on.
                return Exit.hasInterrupts(exit) ? Effect.void : afterRun(claimed.org_id)
              })
            ),
            Effect.forkIn(scope)
          )
        })

      const claimAll = (orgId: string) =>
        Effect.gen(function*() {
          let started = 0
          while (true) {
            if (taken >= slots) {
              waiting.add(orgId)
              return started
            }
            taken++
            // Claimed and started as one step: a claimed run is always executing (and heartbeating).
            const claimed = yield* Effect.uninterruptible(
              claimRun(sql, runner, orgId).pipe(
                Effect.onExit((exit) =>
                  Effect.sync(() => {
                    if (Exit.isFailure(exit) || exit.value === undefined) taken--
                  })
                ),
                Effect.tap((row) => row === undefined ? Effect.void : start(row))
              )
            )
            if (claimed === undefined) return started
            started++
          }
        })

      const claim = (orgId: string) =>
        role.executes
          ? claimAll(orgId).pipe(
            Effect.catchCause((cause) =>
              Cause.hasInterruptsOnly(cause)
                ? Effect.failCause(cause as Cause.Cause<never>)
                : Effect.logWarning("CI: claiming runs failed (the sweep retries)", cause).pipe(Effect.as(0))
            ),
            Effect.annotateLogs({ orgId })
          )
          : Effect.succeed(0)

      if (role.executes) {
        yield* Effect.andThen(
          Effect.suspend(() => {
            // Only runs held before the heartbeat's query: one claimed meanwhile is not in its answer.
            const before = [...active.entries()]
            if (before.length === 0) return Effect.void
            return Effect.flatMap(heartbeat(sql, runner, before.map(([id]) => id)), (held) =>
              // Cancelled, or no longer ours (swept as lost after a long pause): stop the job.
              Effect.forEach(before, ([id, signal]) =>
                held.get(id) === false ? Effect.void : Deferred.succeed(signal, undefined), { discard: true }))
          }),
          Effect.sleep(HEARTBEAT_EVERY)
        ).pipe(restartOnFailure("CI: heartbeat failed"), Effect.forkIn(scope))
      }

      return CiExecutions.of({ executes: role.executes, claim, wake })
    })
  )
}
