import { Clock, Effect } from "effect"

/**
 * Where a review's time goes, per phase (GUIDE §15, `npm run bench:ai`): what Canopy adds
 * around the model is everything but `model` less the provider's own round trip. Logged
 * once per finished review, so an operator (and the benchmark) sees the breakdown.
 */
export const PHASES = ["start", "diff", "prompt", "model", "parse", "post", "status"] as const
export type Phase = typeof PHASES[number]

export interface Phases {
  /** Runs `effect`, adding its time (also when it fails) to `phase`. */
  readonly time: (phase: Phase) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** `AI review air_… completed in 12.3 ms (start 1.0, diff 2.1, …)`. */
  readonly line: (reviewId: string, status: string) => string
}

const ms = (nanos: bigint) => Number(nanos) / 1e6

export const makePhases: Effect.Effect<Phases> = Effect.gen(function*() {
  const began = yield* Clock.currentTimeNanos
  const spent = new Map<Phase, number>(PHASES.map((phase) => [phase, 0]))
  let ended = began
  const time = (phase: Phase) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.flatMap(
      Clock.currentTimeNanos,
      (t0) =>
        Effect.onExit(effect, () =>
          Effect.map(Clock.currentTimeNanos, (t1) => {
            spent.set(phase, spent.get(phase)! + ms(t1 - t0))
            ended = t1 > ended ? t1 : ended
          }))
    )
  const line = (reviewId: string, status: string) =>
    `AI review ${reviewId} ${status} in ${ms(ended - began).toFixed(1)} ms (${
      PHASES.map((phase) => `${phase} ${spent.get(phase)!.toFixed(1)}`).join(", ")
    })`
  return { time, line }
})
