import { Cause, Clock, Context, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { PullRequest } from "../../../services/pulls/PullRequestProtocol.ts"
import { staleStepDue } from "../../../services/pulls/PullRequestRows.ts"
import * as RunnerAlarms from "../RunnerAlarms.ts"

/** After a failed `Tick` or stale step (database or cluster trouble), try again this much later. */
export const RETRY_AFTER_ERROR_MS = 5_000

/**
 * Each runner's stale timers for the pull requests it hosts (`RunnerAlarms`): at most one
 * per pull request, on the Effect `Clock` (so `TestClock` drives them), sending the entity
 * a `Tick` when due. The durable truth is the row (`last_activity_at`, `stale_warned_at`
 * and the repository's setting): the entity re-arms after every step, and every runner
 * re-arms the open pull requests whose shard it holds at start and every `sweepInterval`
 * (after a restart, after shards moved), so a restart loses no timer.
 */
export class PullRequestAlarms extends Context.Service<PullRequestAlarms, {
  /** Arms (or moves) the pull request's timer to `at` (ms); `null` cancels it. */
  readonly set: (prId: string, at: number | null) => void
  readonly get: (prId: string) => number | undefined
}>()("canopy/pulls/PullRequestAlarms") {
  static readonly layer = Layer.effect(
    PullRequestAlarms,
    Effect.gen(function*() {
      const makeClient = yield* PullRequest.client
      const clock = yield* Clock.Clock

      const timers: RunnerAlarms.RunnerAlarms<void> = yield* RunnerAlarms.make<void>({
        hosted: yield* RunnerAlarms.hostedHere(PullRequest),
        fire: (prId) =>
          makeClient(prId).Tick(undefined).pipe(
            Effect.asVoid,
            Effect.catchCause((cause) =>
              Cause.hasInterruptsOnly(cause)
                ? Effect.failCause(cause as Cause.Cause<never>)
                : Effect.logWarning("PullRequest: stale tick failed, retrying", cause).pipe(
                  Effect.annotateLogs({ prId }),
                  Effect.andThen(Effect.sync(() => set(prId, clock.currentTimeMillisUnsafe() + RETRY_AFTER_ERROR_MS)))
                )
            )
          )
      })

      const set = (prId: string, at: number | null) => {
        if (at === null) timers.cancel(prId)
        else if (timers.get(prId)?.at !== at) timers.set(prId, at, undefined)
      }

      return PullRequestAlarms.of({ set, get: (prId) => timers.get(prId)?.at })
    })
  )
}

/**
 * Hands the stale steps due before the next sweep to their entities (which arm the exact
 * timer where they run), at start and every `sweepInterval` (default 10 minutes): this is
 * what re-arms the timers after a restart or when shards move.
 */
export const PullRequestSweep = (options?: { readonly sweepInterval?: Duration.Input | undefined }) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const makeClient = yield* PullRequest.client
    const interval = Duration.fromInputUnsafe(options?.sweepInterval ?? "10 minutes")
    const sweep = Effect.gen(function*() {
      const horizon = new Date((yield* Clock.currentTimeMillis) + Duration.toMillis(interval))
      const rows = yield* staleStepDue(sql, horizon)
      // Right after a start the shards may not be assigned yet: retry each a few times.
      yield* Effect.forEach(
        rows,
        (row) =>
          makeClient(row.id).Tick(undefined).pipe(
            Effect.retry({ schedule: Schedule.spaced("1 second"), times: 30 }),
            Effect.catchCause((cause) => Effect.logWarning("PullRequest: stale tick failed", cause))
          ),
        { concurrency: 8, discard: true }
      )
    })
    yield* Effect.andThen(
      sweep.pipe(Effect.catchCause((cause) => Effect.logWarning("PullRequest: stale sweep failed", cause))),
      Effect.sleep(interval)
    ).pipe(Effect.forever, Effect.forkScoped)
  }))
