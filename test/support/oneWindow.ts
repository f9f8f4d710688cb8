import { expect } from "@effect/vitest"
import { Effect } from "effect"

/** How a run that needs one per-minute rate-limit window throughout ended. */
export type WindowRun = "done" | "window ended"

/**
 * Runs `run`, a real-time test whose requests must all fall in one per-minute window, and
 * once more if a minute ended during it (the run saw two `X-RateLimit-Reset`s): the second
 * run starts just after a minute began, so it has the whole minute. Cheaper than waiting for
 * a fresh minute before every run. `attempt` (1, 2) keeps the runs' organizations apart.
 */
export const withinOneWindow = <E, R>(run: (attempt: number) => Effect.Effect<WindowRun, E, R>) =>
  Effect.gen(function*() {
    if ((yield* run(1)) === "done") return
    expect(yield* run(2)).toBe("done")
  })
