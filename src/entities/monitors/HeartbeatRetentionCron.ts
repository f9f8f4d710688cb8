import { Cron, Effect } from "effect"
import { ClusterCron } from "effect/cluster"
import { Uptime } from "../../../services/monitors/Uptime.ts"

export const HEARTBEAT_RETENTION_DAYS = 90

/** Daily heartbeat retention on one runner of the cluster (03:17 UTC). */
export const HeartbeatRetentionCron = ClusterCron.make({
  name: "monitoring/PruneHeartbeats",
  cron: Cron.parseUnsafe("17 3 * * *"),
  execute: Effect.gen(function*() {
    const uptime = yield* Uptime
    const deleted = yield* uptime.pruneHeartbeats(HEARTBEAT_RETENTION_DAYS)
    yield* Effect.logInfo(`Pruned ${deleted} heartbeats older than ${HEARTBEAT_RETENTION_DAYS} days`)
  })
})
