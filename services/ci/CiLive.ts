import { Layer } from "effect"
import { CiRuns } from "./CiRuns.ts"
import { CiSettings } from "./CiSettings.ts"
import { Executor } from "./Executor.ts"
import { RunExecution } from "./RunExecution.ts"

/** CI's services (GUIDE §14): settings and runs for the API, and the execution of claimed runs. */
export const CiLive = Layer.mergeAll(CiRuns.layer, RunExecution.layer).pipe(
  Layer.provideMerge(Layer.mergeAll(CiSettings.layer, Executor.layerBubblewrap()))
)
