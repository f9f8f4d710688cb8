import { Config, Context, Effect, Layer, Semaphore } from "effect"
import * as Os from "node:os"

/**
 * The runner's budget for heavy git work (indexing a pushed pack, connectivity checks and
 * walks over a push, writing packs in compaction): at most `GIT_HEAVY_CONCURRENCY` at once
 * (default: the cores less one, at least one), the rest queued in order. With the child
 * processes' lower priority (`HEAVY_NICE`), one tenant's import leaves the runner's event
 * loop, Postgres and the monitors' checks the CPU they need.
 */
export class GitWork extends Context.Service<GitWork, {
  heavy<A, E, R>(work: Effect.Effect<A, E, R>): Effect.Effect<A, E, R>
  /** Heavy jobs running or queued (tests, benchmarks). */
  readonly pending: Effect.Effect<number>
}>()("canopy/git/GitWork") {
  static readonly layer = Layer.effect(
    GitWork,
    Effect.gen(function*() {
      const permits = yield* Config.Number("GIT_HEAVY_CONCURRENCY").pipe(
        Config.withDefault(Math.max(1, Os.availableParallelism() - 1))
      )
      const semaphore = Semaphore.makeUnsafe(Math.max(1, permits))
      let pending = 0
      const heavy = <A, E, R>(work: Effect.Effect<A, E, R>) =>
        Effect.acquireUseRelease(
          Effect.sync(() => void pending++),
          () => semaphore.withPermit(work),
          () => Effect.sync(() => void pending--)
        )
      return GitWork.of({ heavy, pending: Effect.sync(() => pending) })
    })
  )
}

/**
 * The niceness of heavy git processes (`GIT_HEAVY_NICE`, default 10; 0 turns it off): below
 * the server's own priority, so they yield the CPU to it. Read once at start (the git helpers
 * that spawn them are plain functions, outside any layer).
 */
export const HEAVY_NICE = (() => {
  const value = Number(process.env.GIT_HEAVY_NICE ?? 10)
  return Number.isInteger(value) && value > 0 && value <= 19 ? value : undefined
})()
