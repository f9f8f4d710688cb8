import { Effect, Layer } from "effect"
import { ServerMergeStatusChecks } from "../pulls/BranchRules.ts"
import { CiCaches } from "./CiCaches.ts"
import { CiRuns } from "./CiRuns.ts"
import { CiSettings } from "./CiSettings.ts"
import { Executor } from "./Executor.ts"
import { RunExecution } from "./RunExecution.ts"
import { CI_CONTEXT } from "./RunReports.ts"

/** With CI enabled on a repository, auto-merge and the AI's merge wait for `ci/test` (GUIDE §14). */
const CiMergeGate = Layer.effect(
  ServerMergeStatusChecks,
  Effect.map(
    CiSettings,
    (settings) => (repo) =>
      Effect.map(settings.config(repo), (config): ReadonlyArray<string> => config.enabled ? [CI_CONTEXT] : [])
  )
)

/** CI's services (GUIDE §14): settings and runs for the API, the execution of claimed runs, the merge gate. */
export const CiLive = Layer.mergeAll(CiRuns.layer, RunExecution.layer, CiMergeGate).pipe(
  Layer.provideMerge(CiCaches.layer),
  Layer.provideMerge(Layer.mergeAll(CiSettings.layer, Executor.layerBubblewrap()))
)
