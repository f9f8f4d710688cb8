import { Layer } from "effect"
import { CiExecutions } from "./CiExecutions.ts"
import { CiLostRunSweep } from "./CiLostRunSweep.ts"
import { CiQueueEntityLayer } from "./CiQueueEntity.ts"
import { CiQueueWaker } from "./CiQueueWaker.ts"

/**
 * CI execution in the cluster (GUIDE §14). The queue is the `ci_runs` table (a restart loses
 * no queued run); an organization's runs are claimed by its `CiQueue` entity, which lives in
 * the `ci` shard group, held only by runners started with `CI_WORKER=true` (`layers/Cluster.ts`),
 * and executed by that runner's `CiExecutions`. Runners without CI work host no `ci` shard,
 * listen to no CI notification and claim nothing; every runner sweeps lost runs.
 */
export const CiWorker = Layer.mergeAll(CiQueueEntityLayer, CiQueueWaker, CiLostRunSweep).pipe(
  Layer.provide(CiExecutions.layer)
)
