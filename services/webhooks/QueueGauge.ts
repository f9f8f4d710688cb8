import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { queueDepth } from "./QueueRows.ts"

/** Pending deliveries across every webhook, for the `canopy_webhook_queue_depth` gauge (counted up to `cap`). */
export const webhookQueueDepth = (sql: SqlClient.SqlClient, cap: number) =>
  Effect.map(queueDepth(sql, cap), (rows) => rows[0]?.depth ?? 0)
