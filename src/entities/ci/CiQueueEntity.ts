import { Effect } from "effect"
import { Entity } from "effect/cluster"
import { CiQueue } from "../../../services/ci/CiQueueProtocol.ts"
import { CiExecutions } from "./CiExecutions.ts"

/**
 * An organization's CI queue (GUIDE §14), hosted only by runners holding `ci` shards: a
 * `Wake` claims its runs for this runner's executions. Stateless: the `ci_runs` rows are the
 * queue, so passivating (or moving the shard) loses nothing.
 */
export const CiQueueEntityLayer = CiQueue.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const executions = yield* CiExecutions
    const orgId = address.entityId
    return CiQueue.of({ Wake: () => executions.claim(orgId) })
  }),
  { maxIdleTime: "1 minute" }
)
