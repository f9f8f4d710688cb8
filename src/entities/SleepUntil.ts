import { type Clock, Effect } from "effect"

/**
 * Sleeps until the absolute time `at` (ms) on `clock`. The delay is taken when the sleeping
 * fiber starts, not when it is forked: a timer forked just before the clock moves (a busy
 * runner, or `TestClock.adjust` in a test) still wakes at `at` instead of `at` plus the move.
 */
export const sleepUntil = (clock: Clock.Clock, at: number): Effect.Effect<void> =>
  Effect.suspend(() => Effect.sleep(Math.max(0, at - clock.currentTimeMillisUnsafe())))
