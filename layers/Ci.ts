import { Layer } from "effect"
import { CiRuns } from "../services/ci/CiRuns.ts"
import { CiSettings } from "../services/ci/CiSettings.ts"
import { Executor } from "../services/ci/Executor.ts"
import { RunExecution } from "../services/ci/RunExecution.ts"
import { CiTriggers } from "../src/entities/ci/CiTriggers.ts"
import { CiWorker } from "../src/entities/ci/CiWorker.ts"

/** CI (GUIDE §14): settings and runs for the API, the push/PR triggers, and this runner's worker. */
export const CiLive = Layer.mergeAll(CiTriggers, CiWorker).pipe(
  Layer.provideMerge(RunExecution.layer),
  Layer.provideMerge(Layer.mergeAll(CiRuns.layer, Executor.layerBubblewrap())),
  Layer.provideMerge(CiSettings.layer)
)
