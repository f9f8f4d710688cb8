import { Cause, Effect } from "effect"

/**
 * A background loop that must outlive its failures (a LISTEN connection, a sweep): on a failure
 * other than interruption it logs `message` with the cause, waits a second and runs again;
 * interruption (the runner stopping) ends it.
 */
export const restartOnFailure = (message: string) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  self.pipe(
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause)
        : Effect.logWarning(message, cause).pipe(Effect.andThen(Effect.sleep("1 second")))
    ),
    Effect.forever
  )
