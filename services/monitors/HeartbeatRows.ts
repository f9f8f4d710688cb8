import { Effect, Option, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type * as Statement from "effect/sql/Statement"
import { type Heartbeat, HeartbeatStatus } from "../../schemas/monitors/Monitors.ts"
import { appendStatement, type NewDomainEvent } from "../events/Events.ts"
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
 * One attempt's heartbeat, unique per monitor, slot and attempt: a replay inserts nothing.
 * Returns the new row's `id` (none for a replay); the recorder embeds it as a CTE.
 */
export const insertHeartbeat = (sql: SqlClient.SqlClient, beat: NewHeartbeat) =>
  sql`
    INSERT INTO heartbeats (monitor_id, slot_at, attempt, checked_at, status, response_time_ms, status_code, error, region)
    VALUES (${beat.monitorId}, ${beat.slotAt}, ${beat.attempt}, ${beat.checkedAt}, ${beat.status},
      ${beat.responseTimeMs}, ${beat.statusCode}, ${beat.error}, ${beat.region})
    ON CONFLICT (monitor_id, slot_at, attempt) DO NOTHING
    RETURNING id`

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

/** Whether the heartbeat of `recordCheck` was new: the condition of the statement's other parts. */
export const heartbeatRecorded = (sql: SqlClient.SqlClient) => sql.literal("EXISTS (SELECT 1 FROM heartbeat)")

const RecordedRow = Schema.Struct({ recorded: Schema.Int })

/**
 * A check as one statement (one round trip): the heartbeat insert and, each conditional on
 * `heartbeatRecorded`, the uptime rollup, the monitor's status and the events; answers
 * whether the heartbeat was new (1) or a duplicate (0).
 */
export const recordCheck = (
  sql: SqlClient.SqlClient,
  parts: {
    readonly heartbeat: Statement.Fragment
    readonly rollup: Statement.Fragment | undefined
    readonly status: Statement.Fragment | undefined
    readonly events: ReadonlyArray<NewDomainEvent>
  }
) =>
  sql`
    WITH heartbeat AS (${parts.heartbeat}),
    ${parts.rollup === undefined ? sql.literal("") : sql`rollup AS (${parts.rollup}),`}
    ${parts.status === undefined ? sql.literal("") : sql`status AS (${parts.status}),`}
    appended AS (${appendStatement(sql, parts.events, heartbeatRecorded(sql))})
    SELECT (SELECT count(*) FROM heartbeat)::int AS recorded`.pipe(decodeRows(RecordedRow))
