import { Cause, Clock, type Context, Effect } from "effect"
import { Entity } from "effect/cluster"
import { Automation } from "../../../services/pulls/Automation.ts"
import { Mergeability } from "../../../services/pulls/Mergeability.ts"
import { Merger } from "../../../services/pulls/Merger.ts"
import { PullRequest } from "../../../services/pulls/PullRequestProtocol.ts"
import { PullRequestAlarms, RETRY_AFTER_ERROR_MS } from "./PullRequestAlarms.ts"

const logged = (message: string, prId: string) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.catchCause(self, (cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.failCause(cause as Cause.Cause<never>)
      : Effect.logWarning(message, cause).pipe(Effect.annotateLogs({ prId })))

export const PullRequestEntityLayer = PullRequest.toLayer(
  Effect.gen(function*() {
    const prId = (yield* Entity.CurrentAddress).entityId
    const mergeability = yield* Mergeability
    const automation = yield* Automation
    const merger = yield* Merger
    const alarms = yield* PullRequestAlarms
    // A local send from inside a transaction (an event consumer's) must not make our SQL
    // join it: handlers run in the entity's own context.
    const context = yield* Effect.context<never>()
    const own = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.setContext(self, context as Context.Context<R>)

    /** The stale step, with the durable timer armed for the next one. */
    const stale = Effect.tap(automation.staleTick(prId), (next) => Effect.sync(() => alarms.set(prId, next)))
    /** A step that failed (database trouble) is tried again soon, not only at the next sweep. */
    const retrySoon = Effect.flatMap(
      Clock.currentTimeMillis,
      (now) => Effect.sync(() => alarms.set(prId, now + RETRY_AFTER_ERROR_MS))
    )

    return PullRequest.of({
      Refresh: ({ payload }) =>
        Effect.gen(function*() {
          yield* mergeability.refresh(prId, payload.sender).pipe(Effect.orDie)
          const merged = yield* automation.tryAutoMerge(prId)
          if (!merged) yield* stale
        }).pipe(logged("PullRequest: refresh failed", prId), own),
      Merge: ({ payload }) =>
        merger.merge(prId, payload.actor, payload.actor, {
          strategy: payload.strategy,
          commitMessage: payload.commitMessage ?? undefined,
          deleteBranch: payload.deleteBranch
        }).pipe(own),
      Tick: () =>
        stale.pipe(
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.failCause(cause as Cause.Cause<never>)
              : Effect.logWarning("PullRequest: stale check failed, retrying", cause).pipe(
                Effect.annotateLogs({ prId }),
                Effect.andThen(retrySoon),
                Effect.as(null)
              )
          ),
          own
        )
    })
  }),
  { maxIdleTime: "1 minute" }
)
