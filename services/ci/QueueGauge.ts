import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { queuedRunCount } from "./CiRunRows.ts"

/** Runs waiting for a slot, for the `canopy_ci_queue_depth` gauge (counted up to `cap`). */
export const ciQueueDepth = (sql: SqlClient.SqlClient, cap: number) =>
  Effect.map(queuedRunCount(sql, cap), (rows) => rows[0]?.queued ?? 0)
