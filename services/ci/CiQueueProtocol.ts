import { Schema } from "effect"
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"

/**
 * The shard group of CI work (GUIDE §14): every runner knows it (`layers/Cluster.ts`), only
 * runners started with `CI_WORKER=true` hold its shards, so only they execute jobs.
 */
export const CI_SHARD_GROUP = "ci"

/**
 * Claim the organization's queued runs (oldest first, up to the plan's concurrency
 * cluster-wide and this runner's free slots) and start them on this runner; answers how many
 * started. Not persisted: a lost wake-up loses nothing, since the `ci_runs` rows are the
 * queue and the `ci` sweep wakes every organization with a claimable run every few seconds.
 */
export const Wake = Rpc.make("Wake", { success: Schema.Int })

/** One entity per organization, in the `ci` shard group; behaviour in `src/entities/ci/CiQueueEntity.ts`. */
export const CiQueue = Entity.make("CiQueue", [Wake]).annotate(ClusterSchema.ShardGroup, () => CI_SHARD_GROUP)
