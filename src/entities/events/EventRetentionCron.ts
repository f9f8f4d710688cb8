import { Clock, Cron, Effect } from "effect"
import { ClusterCron } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { EVENT_RETENTION_DAYS, pruneEvents } from "../../../services/events/EventRetention.ts"

/**
 * Outbox retention on one runner of the cluster, hourly (at :37): an hour of events at a
 * time is a bounded job, where a daily one would delete a whole day's in one go.
 */
export const EventRetentionCron = ClusterCron.make({
  name: "platform/PruneEvents",
  cron: Cron.parseUnsafe("37 * * * *"),
  execute: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const deleted = yield* pruneEvents(sql, { now: yield* Clock.currentTimeMillis })
    if (deleted > 0) yield* Effect.logInfo(`Pruned ${deleted} domain events older than ${EVENT_RETENTION_DAYS} days`)
  })
})
