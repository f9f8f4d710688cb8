import { Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { decodeRows } from "../platform/Rows.ts"

/*
 * The `monitor_alerts` table: one row per monitor that is down and alerted, and every
 * statement on it (`MonitorAlerts` is its one owner). Each takes the caller's `SqlClient`.
 */

/** An open outage; `downEventId` is the `monitor.status` event that opened it (a bigint, read as text). */
const OpenAlert = Schema.Struct({
  monitorId: Schema.String,
  downEventId: Schema.String,
  downSince: Schema.Date,
  error: Schema.NullOr(Schema.String)
})

/** What closing an outage returns. */
const ClosedAlert = Schema.Struct({ downSince: Schema.Date })

/** Opens (or replaces) the monitor's outage. */
export const openAlert = (sql: SqlClient.SqlClient, alert: {
  readonly monitorId: string
  readonly downEventId: number
  readonly downSince: Date
  readonly error: string | null
}) =>
  sql`
    INSERT INTO monitor_alerts (monitor_id, down_event_id, down_since, error)
    VALUES (${alert.monitorId}, ${alert.downEventId}, ${alert.downSince}, ${alert.error})
    ON CONFLICT (monitor_id) DO UPDATE SET down_event_id = EXCLUDED.down_event_id,
      down_since = EXCLUDED.down_since, error = EXCLUDED.error`

/** Closes the monitor's outage; when it began (no row: none was open). */
export const closeAlert = (sql: SqlClient.SqlClient, monitorId: string) =>
  sql`DELETE FROM monitor_alerts WHERE monitor_id = ${monitorId} RETURNING down_since AS "downSince"`.pipe(
    decodeRows(ClosedAlert)
  )

/** The outages open for at least `ms` milliseconds. */
export const alertsDownFor = (sql: SqlClient.SqlClient, ms: number) =>
  sql`
    SELECT a.monitor_id AS "monitorId", a.down_event_id::text AS "downEventId", a.down_since AS "downSince", a.error
    FROM monitor_alerts a
    WHERE a.down_since <= now() - make_interval(secs => ${ms / 1000})`.pipe(decodeRows(OpenAlert))
