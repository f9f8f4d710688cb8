import { type Duration, Layer } from "effect"
import { PullRequestAlarms, PullRequestSweep } from "./PullRequestAlarms.ts"
import { PullRequestEntityLayer } from "./PullRequestEntity.ts"
import { PullRequestSignals } from "./PullRequestSignals.ts"

/**
 * One entity per pull request (GUIDE §11) with its stale timers (`PullRequestAlarms.ts`),
 * the sweep that re-arms them, and the consumer that re-evaluates pull requests on pushes
 * and commit statuses (`PullRequestSignals.ts`).
 */
export const PullRequestLive = (options?: { readonly sweepInterval?: Duration.Input | undefined }) =>
  Layer.mergeAll(PullRequestEntityLayer, PullRequestSweep(options), PullRequestSignals).pipe(
    Layer.provideMerge(PullRequestAlarms.layer)
  )
