import { Effect } from "effect"

/** Sleeps in real time, whatever clock the test runs with. */
export const realSleep = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

/**
 * Polls `read` in real time until `done` holds, then waits `settleMs` (e.g. so a loop under
 * test registers its next sleep before the TestClock moves again); dies after `timeoutMs`
 * with the label and the last value read.
 */
export const eventually = <A, E, R>(
  label: string,
  read: Effect.Effect<A, E, R>,
  done: (a: A) => boolean,
  options?: { readonly timeoutMs?: number; readonly pollMs?: number; readonly settleMs?: number }
) =>
  Effect.gen(function*() {
    const deadline = Date.now() + (options?.timeoutMs ?? 30_000)
    while (true) {
      const value = yield* read
      if (done(value)) {
        if (options?.settleMs !== undefined) yield* realSleep(options.settleMs)
        return value
      }
      if (Date.now() > deadline) {
        return yield* Effect.die(new Error(`timed out waiting for ${label}: ${JSON.stringify(value)}`))
      }
      yield* realSleep(options?.pollMs ?? 100)
    }
  })

/**
 * For TestClock tests: polls fast and, once `done` holds, lets the loop under test settle
 * (register its next sleep) before the test moves the clock again.
 */
export const eventuallySettled = <A, E, R>(label: string, read: Effect.Effect<A, E, R>, done: (a: A) => boolean) =>
  eventually(label, read, done, { timeoutMs: 15_000, pollMs: 25, settleMs: 150 })

/** For TestClock tests: `read` still satisfies `same` after a real-time pause (nothing happened). */
export const stays = <A, E, R>(read: Effect.Effect<A, E, R>, same: (a: A) => boolean) =>
  Effect.gen(function*() {
    yield* realSleep(400)
    if (!same(yield* read)) return yield* Effect.die(new Error("something happened while the clock stood still"))
  })
