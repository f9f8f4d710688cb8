import { Effect, Option, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type * as Statement from "effect/sql/Statement"
import { type Heartbeat, HeartbeatStatus } from "../../schemas/monitors/Monitors.ts"
import { appendSelectedStatement } from "../events/Events.ts"
import { decodeRows, Int8 } from "../platform/Rows.ts"

/*
 * The `heartbeats` table: its row and every statement on it (the table's one owner). Each
 * statement takes the caller's `SqlClient`, so it runs in the caller's transaction; the
 * recorder embeds the insert in its one-statement CTE.
 */

/** A heartbeat as the API lists it. */
export const HeartbeatRow = Schema.Struct({
  checked_at: Schema.Date,
  status: HeartbeatStatus,
  response_time_ms: Schema.Int,
  status_code: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String),
  region: Schema.String
})
export type HeartbeatRow = typeof HeartbeatRow.Type

export const toHeartbeat = (row: HeartbeatRow): Heartbeat => ({
  timestamp: row.checked_at.toISOString(),
  status: row.status,
  responseTime: row.response_time_ms,
  region: row.region,
  ...(row.status_code !== null ? { statusCode: row.status_code } : {}),
  ...(row.error !== null ? { error: row.error } : {})
})

export interface NewHeartbeat {
  readonly monitorId: string
  readonly slotAt: Date
  readonly attempt: number
  readonly checkedAt: Date
  readonly status: HeartbeatStatus
  readonly responseTimeMs: number
  readonly statusCode: number | null
  readonly error: string | null
  readonly region: string
}

/**
 * Many attempts' heartbeats in one insert (the recorder's group commit; at most one per
 * monitor). A replayed one inserts nothing; returns `monitor_id` of each new row.
 */
export const insertHeartbeatsStatement = (sql: SqlClient.SqlClient, beats: ReadonlyArray<NewHeartbeat>) => {
  const rows = JSON.stringify(beats.map((beat) => ({
    monitor_id: beat.monitorId,
    slot_at: beat.slotAt.toISOString(),
    attempt: beat.attempt,
    checked_at: beat.checkedAt.toISOString(),
    status: beat.status,
    response_time_ms: beat.responseTimeMs,
    status_code: beat.statusCode,
    error: beat.error,
    region: beat.region
  })))
  return sql`
    INSERT INTO heartbeats (monitor_id, slot_at, attempt, checked_at, status, response_time_ms, status_code, error, region)
    SELECT r.monitor_id, r.slot_at, r.attempt, r.checked_at, r.status, r.response_time_ms, r.status_code, r.error, r.region
    FROM jsonb_to_recordset(${rows}::jsonb) AS r(monitor_id text, slot_at timestamptz, attempt integer,
      checked_at timestamptz, status text, response_time_ms integer, status_code integer, error text, region text)
    ON CONFLICT (monitor_id, slot_at, attempt) DO NOTHING
    RETURNING monitor_id`
}

/** The slot of the monitor's newest heartbeat (epoch ms, truncated), if any. */
export const lastSlotAt = (sql: SqlClient.SqlClient, monitorId: string) =>
  sql`
    SELECT floor(extract(epoch FROM slot_at) * 1000)::float8 AS "slotAt" FROM heartbeats
    WHERE monitor_id = ${monitorId} ORDER BY checked_at DESC LIMIT 1`.pipe(
    decodeRows(Schema.Struct({ slotAt: Schema.Number })),
    Effect.map((rows) => Option.map(Option.fromUndefinedOr(rows[0]), (row) => row.slotAt))
  )

const heartbeatColumns = "checked_at, status, response_time_ms, status_code, error, region"

/** The monitor's `limit` newest heartbeats, newest first. */
export const recentHeartbeats = (sql: SqlClient.SqlClient, monitorId: string, limit: number) =>
  sql`
    SELECT ${sql.literal(heartbeatColumns)} FROM heartbeats
    WHERE monitor_id = ${monitorId} ORDER BY checked_at DESC, id DESC LIMIT ${limit}`.pipe(decodeRows(HeartbeatRow))

/** The monitor's heartbeats checked within `from`–`to` (inclusive, either open). */
export const heartbeatRange = (
  sql: SqlClient.SqlClient,
  monitorId: string,
  range: { readonly from?: Date | undefined; readonly to?: Date | undefined }
): Statement.Fragment =>
  sql.and([
    sql`monitor_id = ${monitorId}`,
    ...(range.from !== undefined ? [sql`checked_at >= ${range.from.toISOString()}::timestamptz`] : []),
    ...(range.to !== undefined ? [sql`checked_at <= ${range.to.toISOString()}::timestamptz`] : [])
  ])

/** The newest `limit` heartbeats of a `heartbeatRange`, newest first. */
export const heartbeatPage = (sql: SqlClient.SqlClient, range: Statement.Fragment, limit: number) =>
  sql`
    SELECT ${sql.literal(heartbeatColumns)} FROM heartbeats
    WHERE ${range} ORDER BY checked_at DESC, id DESC LIMIT ${limit}`.pipe(decodeRows(HeartbeatRow))

/** How many heartbeats a `heartbeatRange` holds. */
export const countHeartbeats = (sql: SqlClient.SqlClient, range: Statement.Fragment) =>
  sql`SELECT count(*) AS total FROM heartbeats WHERE ${range}`.pipe(
    decodeRows(Schema.Struct({ total: Int8 })),
    Effect.map((rows) => rows[0]?.total ?? 0)
  )

/** What the monitor's newest heartbeat reported (for a down alert), if it has one. */
export const latestOutcome = (sql: SqlClient.SqlClient, monitorId: string) =>
  sql`
    SELECT error, status_code AS "statusCode" FROM heartbeats
    WHERE monitor_id = ${monitorId} ORDER BY checked_at DESC, id DESC LIMIT 1`.pipe(
    decodeRows(Schema.Struct({ error: Schema.NullOr(Schema.String), statusCode: Schema.NullOr(Schema.Int) })),
    Effect.map((rows) => Option.fromUndefinedOr(rows[0]))
  )

/** Deletes the monitors' heartbeats checked before `cutoff`; how many. */
export const deleteHeartbeatsBefore = (sql: SqlClient.SqlClient, monitorIds: ReadonlyArray<string>, cutoff: Date) =>
  sql`
    WITH gone AS (
      DELETE FROM heartbeats
      WHERE monitor_id IN ${sql.in(monitorIds)} AND checked_at < ${cutoff.toISOString()}::timestamptz
      RETURNING 1
    )
    SELECT count(*) AS n FROM gone`.pipe(
    decodeRows(Schema.Struct({ n: Int8 })),
    Effect.map((rows) => rows[0]?.n ?? 0)
  )

/** The monitors whose heartbeat `recordChecks` inserted: the condition of its other parts. */
export const recordedMonitorIds = (sql: SqlClient.SqlClient) => sql.literal("(SELECT monitor_id FROM heartbeat)")

const InsertedRow = Schema.Struct({ monitorId: Schema.String })

/**
 * Checks of many monitors as one statement (one round trip): the heartbeats' insert and, each
 * applied only to the monitors in `recordedMonitorIds`, the uptime rollups, the monitors'
 * statuses and the events (`events`: a JSON array of `{monitorId, type, orgId, data}` in
 * append order). Answers the monitors whose heartbeat was new. No NOTIFY in it (it would
 * serialise every check's commit cluster-wide): the caller wakes readers once it committed.
 */
export const recordChecks = (
  sql: SqlClient.SqlClient,
  parts: {
    readonly beats: ReadonlyArray<NewHeartbeat>
    readonly rollups: Statement.Fragment | undefined
    readonly status: Statement.Fragment | undefined
    readonly events: string
  }
) =>
  sql`
    WITH heartbeat AS (${insertHeartbeatsStatement(sql, parts.beats)}),
    ${parts.rollups === undefined ? sql.literal("") : sql`rollup AS (${parts.rollups}),`}
    ${parts.status === undefined ? sql.literal("") : sql`status AS (${parts.status}),`}
    appended AS (${
    appendSelectedStatement(
      sql,
      sql`SELECT e.value->>'type', e.value->>'orgId', e.value->'data'
        FROM jsonb_array_elements(${parts.events}::jsonb) WITH ORDINALITY AS e(value, n)
        WHERE e.value->>'monitorId' IN ${recordedMonitorIds(sql)}
        ORDER BY e.n`
    )
  })
    SELECT monitor_id AS "monitorId" FROM heartbeat`.pipe(decodeRows(InsertedRow))
