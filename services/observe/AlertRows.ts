import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { Alert, SpikeEventData } from "../../schemas/observe/Observe.ts"
import { decodeRows, Int8 } from "../platform/Rows.ts"

/* The spike alerts (`observe_alerts`) and every statement on them (their one owner). */

const AlertRow = Schema.Struct({
  id: Schema.String,
  issue_id: Schema.NullOr(Schema.String),
  count: Schema.Int,
  baseline: Schema.Number,
  threshold: Schema.Number,
  created_at: Schema.Date,
  total: Int8
})
type AlertRow = typeof AlertRow.Type

const toAlert = (row: AlertRow): Alert => ({
  id: row.id,
  type: "spike",
  scope: row.issue_id === null ? "organization" : "issue",
  issueId: row.issue_id,
  count: row.count,
  baseline: row.baseline,
  threshold: row.threshold,
  createdAt: row.created_at.toISOString()
})

/** Stores the alerts of spikes that opened at `at` (epoch ms). */
export const insertAlerts = (
  sql: SqlClient.SqlClient,
  orgId: string,
  alerts: ReadonlyArray<SpikeEventData>,
  at: number
) =>
  sql`
    INSERT INTO observe_alerts (id, org_id, issue_id, count, baseline, threshold, created_at)
    SELECT v."alertId", ${orgId}, v."issueId", v.count, v.baseline, v.threshold, to_timestamp(${at} / 1000.0)
    FROM json_to_recordset(${JSON.stringify(alerts)}::json) AS v("alertId" text, "issueId" text, count int,
      baseline real, threshold real)`

/** A page of an organization's alerts, newest first, and how many it has (0 past the end). */
export const alertPage = (
  sql: SqlClient.SqlClient,
  orgId: string,
  page: { readonly limit: number; readonly offset: number }
) =>
  sql`
    SELECT *, count(*) OVER () AS total FROM observe_alerts WHERE org_id = ${orgId}
    ORDER BY created_at DESC, id DESC LIMIT ${page.limit} OFFSET ${page.offset}`.pipe(
    decodeRows(AlertRow),
    Effect.map((rows) => ({ alerts: rows.map(toAlert), count: rows.length === 0 ? 0 : rows[0].total }))
  )
