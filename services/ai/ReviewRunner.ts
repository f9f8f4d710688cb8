import { Clock, Context, Duration, Effect, FiberMap, Layer, Option, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { abandonedReviews, failReview, latestReview, reviewById, strandedReviews } from "./AiReviewRows.ts"
import { Autonomy } from "./Autonomy.ts"
import { ReviewRun } from "./ReviewRun.ts"

/** A review queued this long without a runner picking it up is picked up by the sweep. */
const STRANDED_AFTER = Duration.seconds(5)
/** A review `running` this long belongs to a runner that is gone (calls time out at 120 s each). */
const ABANDONED_AFTER = Duration.minutes(30)

/**
 * Runs reviews on this runner (GUIDE §15): one fiber per pull request, so one review at a
 * time per pull request, and a newer review interrupts an older one still running (the
 * older one is then marked superseded by the newer's claim). A review queued inside another
 * transaction is run once its row is visible; a sweep picks up reviews whose wake-up was
 * lost (a restart, another runner gone) and fails those left `running` by a dead runner.
 */
export class ReviewRunner extends Context.Service<ReviewRunner, {
  /** Runs `reviewId` of pull request `prId` (once its row is committed). */
  kick(prId: string, reviewId: string): Effect.Effect<void>
}>()("canopy/ai/ReviewRunner") {
  static readonly layer = Layer.effect(
    ReviewRunner,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const reviews = yield* ReviewRun
      const autonomy = yield* Autonomy
      const fibers = yield* FiberMap.make<string>()
      const current = new Map<string, string>()

      /** The review's row, once the transaction that queued it committed. */
      const visible = (reviewId: string) =>
        reviewById(sql, reviewId).pipe(
          Effect.orDie,
          Effect.flatMap((row) => Option.isSome(row) ? Effect.succeed(row.value) : Effect.fail("invisible" as const)),
          // The queuing transaction commits within moments (looked at after 2, 4, 8, 16 ms, then
          // every 20 ms, so a review starts as soon as its row is visible); a rolled-back one never does.
          Effect.retry({
            schedule: Schedule.min([Schedule.exponential("2 millis"), Schedule.spaced("20 millis")]),
            times: 1_500
          }),
          Effect.option
        )

      const process = (prId: string, reviewId: string): Effect.Effect<void> =>
        Effect.gen(function*() {
          const queued = yield* visible(reviewId)
          if (Option.isNone(queued)) return
          const finished = yield* reviews.run(queued.value)
          if (Option.isSome(finished)) yield* autonomy.afterReview(finished.value)
        }).pipe(
          Effect.catchCause((cause) => Effect.logError(`AI review ${reviewId} stopped`, cause)),
          Effect.ensuring(Effect.suspend(() => {
            if (current.get(prId) === reviewId) current.delete(prId)
            // A newer review queued while this one ran: run it now.
            return latestReview(sql, prId).pipe(
              Effect.orDie,
              Effect.flatMap((latest) =>
                Option.isSome(latest) && latest.value.status === "queued" && latest.value.id !== reviewId &&
                  !current.has(prId)
                  ? kick(prId, latest.value.id)
                  : Effect.void
              ),
              Effect.catchCause(() => Effect.void)
            )
          }))
        )

      const kick = (prId: string, reviewId: string): Effect.Effect<void> =>
        Effect.suspend(() => {
          if (current.get(prId) === reviewId) return Effect.void
          current.set(prId, reviewId)
          return FiberMap.run(fibers, prId, process(prId, reviewId)).pipe(Effect.asVoid)
        })

      const sweep = Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const stranded = yield* strandedReviews(sql, new Date(now - Duration.toMillis(STRANDED_AFTER)))
        for (const row of stranded) if (!current.has(row.pr_id)) yield* kick(row.pr_id, row.id)
        const abandoned = yield* abandonedReviews(sql, new Date(now - Duration.toMillis(ABANDONED_AFTER)))
        for (const row of abandoned) {
          yield* failReview(sql, row.id, "The review was interrupted; trigger it again", {
            inputTokens: 0,
            outputTokens: 0
          }, new Date(now))
        }
      }).pipe(Effect.catchCause((cause) => Effect.logWarning("AI review sweep failed", cause)))

      yield* sweep.pipe(Effect.repeat(Schedule.spaced(STRANDED_AFTER)), Effect.forkScoped)

      return ReviewRunner.of({ kick })
    })
  )
}
