import { Effect, Option, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type * as Statement from "effect/sql/Statement"
import {
  CheckType,
  DnsRecordType,
  HttpMethod,
  MonitorAssertion,
  MonitorStatus
} from "../../schemas/monitors/Monitors.ts"
import { decodeRows, Int8 } from "../platform/Rows.ts"

/*
 * The `monitors` table: its rows (every row is decoded with one of these Schemas before it
 * leaves `MonitorRepository`, the table's one owner) and every statement on it. Each takes
 * the caller's `SqlClient`, so it runs in the caller's transaction.
 *
 * Timestamps the scheduler compares are epoch milliseconds, truncated (Postgres keeps
 * microseconds); the others are `Date`s.
 */

/** A stored monitor, in full. `frequency`, `timeout` and `retryInterval` are seconds. */
export const MonitorRecord = Schema.Struct({
  id: Schema.String,
  orgId: Schema.String,
  name: Schema.String,
  url: Schema.String,
  method: HttpMethod,
  checkType: CheckType,
  frequency: Schema.Int,
  timeout: Schema.Int,
  expectedCode: Schema.Int,
  headers: Schema.Record(Schema.String, Schema.String),
  body: Schema.NullOr(Schema.String),
  assertions: Schema.NullOr(Schema.Array(MonitorAssertion)),
  dnsRecordType: Schema.NullOr(DnsRecordType),
  expectedValue: Schema.NullOr(Schema.String),
  degradedThresholdMs: Schema.NullOr(Schema.Int),
  retries: Schema.Int,
  retryInterval: Schema.Int,
  alertEmails: Schema.Array(Schema.String),
  active: Schema.Boolean,
  status: MonitorStatus,
  consecutiveFailures: Schema.Int,
  /** The next slot to check (claimed by compare-and-swap by the scheduler). */
  nextCheckAt: Schema.Date,
  lastCheckedAt: Schema.NullOr(Schema.Date),
  /** Start of the interval not yet accounted in the uptime rollups (see `Uptime.ts`). */
  statusSince: Schema.Date,
  createdAt: Schema.Date,
  updatedAt: Schema.Date
})
export type MonitorRecord = typeof MonitorRecord.Type

/** What the scheduler needs between checks (`nextCheckAt` in epoch ms). */
export const MonitorSchedule = Schema.Struct({
  id: Schema.String,
  active: Schema.Boolean,
  nextCheckAt: Schema.Number,
  frequency: Schema.Int,
  retryInterval: Schema.Int,
  status: MonitorStatus
})
export type MonitorSchedule = typeof MonitorSchedule.Type

/** A schedule for the sweep, with the shard recorded for it (null: not known for this shard count). */
export const ShardedSchedule = Schema.Struct({ ...MonitorSchedule.fields, shard: Schema.NullOr(Schema.Int) })
export type ShardedSchedule = typeof ShardedSchedule.Type

/** The state a check result is applied to, read under the row lock (times in epoch ms). */
export const CheckState = Schema.Struct({
  orgId: Schema.String,
  name: Schema.String,
  active: Schema.Boolean,
  status: MonitorStatus,
  consecutiveFailures: Schema.Int,
  retries: Schema.Int,
  degradedThresholdMs: Schema.NullOr(Schema.Int),
  lastCheckedAt: Schema.NullOr(Schema.Number),
  statusSince: Schema.Number
})
export type CheckState = typeof CheckState.Type

/** An active monitor as the public status summary shows it. */
export const MonitorHealth = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  status: MonitorStatus,
  lastCheckedAt: Schema.NullOr(Schema.Date)
})
export type MonitorHealth = typeof MonitorHealth.Type

/** A monitor's open uptime interval: its status since `statusSince`. */
export const StatusSpan = Schema.Struct({ id: Schema.String, status: MonitorStatus, statusSince: Schema.Date })
export type StatusSpan = typeof StatusSpan.Type

/** What an alert email names of the monitor: its name, address and extra recipients. */
export const AlertMonitor = Schema.Struct({
  id: Schema.String,
  orgId: Schema.String,
  name: Schema.String,
  url: Schema.String,
  alertEmails: Schema.Array(Schema.String)
})

/** What an alert email names: the monitor, its organization and its extra recipients. */
export interface AlertSubject extends Schema.Schema.Type<typeof AlertMonitor> {
  readonly slug: string
  readonly orgName: string
}

/** The stored fields a create or update writes (the scheduling columns included). */
export type MonitorWrite = Omit<MonitorRecord, "id" | "orgId" | "lastCheckedAt" | "createdAt">

const ms = (column: string) => `floor(extract(epoch FROM ${column}) * 1000)::float8`

const recordColumns = `
  id, org_id AS "orgId", name, url, method, check_type AS "checkType", frequency, timeout,
  expected_code AS "expectedCode", coalesce(headers, '{}'::jsonb) AS headers, body, assertions,
  dns_record_type AS "dnsRecordType", expected_value AS "expectedValue",
  degraded_threshold_ms AS "degradedThresholdMs", retries, retry_interval AS "retryInterval",
  coalesce(alert_emails, '[]'::jsonb) AS "alertEmails", active, status,
  consecutive_failures AS "consecutiveFailures", next_check_at AS "nextCheckAt",
  last_checked_at AS "lastCheckedAt", status_since AS "statusSince", created_at AS "createdAt",
  updated_at AS "updatedAt"`

const scheduleColumns = `
  id, active, ${ms("next_check_at")} AS "nextCheckAt", frequency, retry_interval AS "retryInterval", status`

const json = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value))
const first = <A>(rows: ReadonlyArray<A>) => Option.fromUndefinedOr(rows[0])
const ids = (rows: ReadonlyArray<{ readonly id: string }>): ReadonlySet<string> => new Set(rows.map((row) => row.id))
const IdRow = Schema.Struct({ id: Schema.String })
const activeFilter = (sql: SqlClient.SqlClient, active: boolean | null) =>
  active === null ? sql.literal("") : sql`AND active = ${active}`

/** One monitor; with `orgId`, only if it belongs to that organization; `lock` locks the row. */
export const findMonitor = (sql: SqlClient.SqlClient, id: string, orgId: string | null, lock: boolean) =>
  sql`SELECT ${sql.literal(recordColumns)} FROM monitors WHERE id = ${id} ${
    orgId === null ? sql.literal("") : sql`AND org_id = ${orgId}`
  }
    ${sql.literal(lock ? "FOR UPDATE" : "")}`.pipe(decodeRows(MonitorRecord), Effect.map(first))

/** A page of an organization's monitors, newest first, each with the total matching. */
export const monitorPage = (sql: SqlClient.SqlClient, page: {
  readonly orgId: string
  readonly active: boolean | null
  readonly limit: number
  readonly offset: number
}) =>
  sql`SELECT ${sql.literal(recordColumns)}, count(*) OVER () AS total FROM monitors
    WHERE org_id = ${page.orgId} ${activeFilter(sql, page.active)}
    ORDER BY created_at DESC, id DESC LIMIT ${page.limit} OFFSET ${page.offset}`.pipe(
    decodeRows(Schema.Struct({ ...MonitorRecord.fields, total: Int8 }))
  )

const TotalRow = Schema.Struct({ total: Int8 })

export const countMonitors = (sql: SqlClient.SqlClient, orgId: string, active: boolean | null) =>
  sql`SELECT count(*) AS total FROM monitors WHERE org_id = ${orgId} ${activeFilter(sql, active)}`.pipe(
    decodeRows(TotalRow),
    Effect.map((rows) => rows[0]?.total ?? 0)
  )

/** The row a write returned (an INSERT, or an UPDATE of a row the caller holds locked). */
const returned = (rows: ReadonlyArray<MonitorRecord>) =>
  rows.length === 0 ? Effect.die(new Error("monitors: the write returned no row")) : Effect.succeed(rows[0])

export const insertMonitor = (sql: SqlClient.SqlClient, id: string, orgId: string, values: MonitorWrite) =>
  sql`
    INSERT INTO monitors (
      id, org_id, name, url, method, check_type, frequency, timeout, expected_code, headers, body,
      assertions, dns_record_type, expected_value, degraded_threshold_ms, retries, retry_interval,
      alert_emails, active, status, consecutive_failures, next_check_at, status_since, created_at, updated_at
    ) VALUES (
      ${id}, ${orgId}, ${values.name}, ${values.url}, ${values.method}, ${values.checkType}, ${values.frequency},
      ${values.timeout}, ${values.expectedCode}, ${JSON.stringify(values.headers)}::jsonb, ${values.body},
      ${json(values.assertions)}::jsonb, ${values.dnsRecordType}, ${values.expectedValue},
      ${values.degradedThresholdMs}, ${values.retries}, ${values.retryInterval},
      ${JSON.stringify(values.alertEmails)}::jsonb, ${values.active}, ${values.status},
      ${values.consecutiveFailures}, ${values.nextCheckAt}, ${values.statusSince}, ${values.updatedAt},
      ${values.updatedAt}
    )
    RETURNING ${sql.literal(recordColumns)}`.pipe(decodeRows(MonitorRecord), Effect.flatMap(returned))

export const updateMonitor = (sql: SqlClient.SqlClient, id: string, values: MonitorWrite) =>
  sql`
    UPDATE monitors SET
      name = ${values.name}, url = ${values.url}, method = ${values.method}, check_type = ${values.checkType},
      frequency = ${values.frequency}, timeout = ${values.timeout}, expected_code = ${values.expectedCode},
      headers = ${JSON.stringify(values.headers)}::jsonb, body = ${values.body},
      assertions = ${json(values.assertions)}::jsonb, dns_record_type = ${values.dnsRecordType},
      expected_value = ${values.expectedValue}, degraded_threshold_ms = ${values.degradedThresholdMs},
      retries = ${values.retries}, retry_interval = ${values.retryInterval}, active = ${values.active},
      alert_emails = ${JSON.stringify(values.alertEmails)}::jsonb, status = ${values.status},
      status_since = ${values.statusSince}, next_check_at = ${values.nextCheckAt},
      consecutive_failures = ${values.consecutiveFailures}, updated_at = ${values.updatedAt}
    WHERE id = ${id}
    RETURNING ${sql.literal(recordColumns)}`.pipe(decodeRows(MonitorRecord), Effect.flatMap(returned))

export const findSchedule = (sql: SqlClient.SqlClient, id: string) =>
  sql`SELECT ${sql.literal(scheduleColumns)} FROM monitors WHERE id = ${id}`.pipe(
    decodeRows(MonitorSchedule),
    Effect.map(first)
  )

/**
 * Takes slots by compare-and-swap, for many monitors (at most one slot each) in one update:
 * moves each `next_check_at` from `expected` to `next` (ms) if the frequency is still
 * `frequency` and the monitor active. Returns the monitors it moved, as they are now.
 */
export const claimSlots = (
  sql: SqlClient.SqlClient,
  slots: ReadonlyArray<{
    readonly id: string
    readonly expected: number
    readonly next: number
    readonly frequency: number
  }>
) => {
  const rows = JSON.stringify(slots.map((slot) => ({
    claim_id: slot.id,
    claim_expected: new Date(slot.expected).toISOString(),
    claim_next: new Date(slot.next).toISOString(),
    claim_frequency: slot.frequency
  })))
  return sql`
    UPDATE monitors SET next_check_at = v.claim_next
    FROM jsonb_to_recordset(${rows}::jsonb)
      AS v(claim_id text, claim_expected timestamptz, claim_next timestamptz, claim_frequency integer)
    WHERE id = v.claim_id AND date_trunc('milliseconds', next_check_at) = v.claim_expected
      AND frequency = v.claim_frequency AND active
    RETURNING ${sql.literal(recordColumns)}`.pipe(decodeRows(MonitorRecord))
}

/** Moves `next_check_at` from `expected` to `next` (ms); false if it moved meanwhile. */
export const rescheduleSlot = (sql: SqlClient.SqlClient, id: string, expected: number, next: number) =>
  Effect.map(
    sql`
      UPDATE monitors SET next_check_at = ${new Date(next)}
      WHERE id = ${id} AND date_trunc('milliseconds', next_check_at) = ${new Date(expected)} AND active
      RETURNING id`,
    (rows) => rows.length > 0
  )

export const findActiveMonitor = (sql: SqlClient.SqlClient, id: string) =>
  sql`SELECT ${sql.literal(recordColumns)} FROM monitors WHERE id = ${id} AND active`.pipe(
    decodeRows(MonitorRecord),
    Effect.map(first)
  )

/** The state check results apply to, of many monitors, the rows locked (in id order, so two batches never deadlock) until the transaction ends. */
export const lockCheckStates = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>) =>
  sql`
    SELECT id, org_id AS "orgId", name, active, status, consecutive_failures AS "consecutiveFailures", retries,
      degraded_threshold_ms AS "degradedThresholdMs", ${sql.literal(ms("last_checked_at"))} AS "lastCheckedAt",
      ${sql.literal(ms("status_since"))} AS "statusSince"
    FROM monitors WHERE id = ANY(${ids}::text[]) ORDER BY id FOR UPDATE`.pipe(
    decodeRows(Schema.Struct({ id: Schema.String, ...CheckState.fields }))
  )

/** A check's effect on its monitor, as `applyChecks` writes it. */
export interface AppliedCheck {
  readonly id: string
  readonly status: MonitorStatus
  readonly consecutiveFailures: number
  readonly checkedAt: Date
}

/**
 * Writes checks' effects on many monitors in one update (the uptime interval restarts no
 * earlier than `checkedAt`), each only if its id is in `monitorIds` (a subquery of the
 * embedding statement).
 */
export const applyChecks = (
  sql: SqlClient.SqlClient,
  checks: ReadonlyArray<AppliedCheck>,
  monitorIds: Statement.Fragment
) => {
  const rows = JSON.stringify(checks.map((check) => ({
    id: check.id,
    status: check.status,
    consecutive_failures: check.consecutiveFailures,
    checked_at: check.checkedAt.toISOString()
  })))
  return sql`
    UPDATE monitors m SET status = v.status, consecutive_failures = v.consecutive_failures,
      last_checked_at = v.checked_at, status_since = greatest(m.status_since, v.checked_at)
    FROM jsonb_to_recordset(${rows}::jsonb) AS v(id text, status text, consecutive_failures integer,
      checked_at timestamptz)
    WHERE m.id = v.id AND v.id IN ${monitorIds}`
}

/** Active monitors of the given shards, plus those whose shard is not recorded for `shardCount`. */
export const shardSchedules = (sql: SqlClient.SqlClient, shards: ReadonlyArray<number>, shardCount: number) =>
  sql`
    SELECT ${sql.literal(scheduleColumns)}, CASE WHEN shard_count = ${shardCount} THEN shard END AS shard
    FROM monitors
    WHERE active AND (shard = ANY(${shards}::int[]) OR shard IS NULL OR shard_count <> ${shardCount})`.pipe(
    decodeRows(ShardedSchedule)
  )

export const assignShards = (
  sql: SqlClient.SqlClient,
  assigned: ReadonlyArray<{ readonly id: string; readonly shard: number }>,
  shardCount: number
) =>
  sql`
    UPDATE monitors m SET shard = v.shard, shard_count = ${shardCount}
    FROM unnest(${assigned.map((a) => a.id)}::text[], ${assigned.map((a) => a.shard)}::int[]) AS v(id, shard)
    WHERE m.id = v.id`.pipe(Effect.asVoid)

/** Which of `monitorIds` (not empty) are monitors of `orgId`. */
export const ownedIds = (sql: SqlClient.SqlClient, orgId: string, monitorIds: ReadonlyArray<string>) =>
  sql`SELECT id FROM monitors WHERE org_id = ${orgId} AND id IN ${sql.in([...monitorIds])}`.pipe(
    decodeRows(IdRow),
    Effect.map(ids)
  )

/** An organization's active monitors, oldest first. */
export const healthOfOrg = (sql: SqlClient.SqlClient, orgId: string) =>
  sql`SELECT id, name, status, last_checked_at AS "lastCheckedAt" FROM monitors
    WHERE org_id = ${orgId} AND active ORDER BY created_at, id`.pipe(decodeRows(MonitorHealth))

export const statusSpans = (sql: SqlClient.SqlClient, monitorIds: ReadonlyArray<string>) =>
  sql`SELECT id, status, status_since AS "statusSince" FROM monitors WHERE id IN ${sql.in([...monitorIds])}`.pipe(
    decodeRows(StatusSpan)
  )

export const idPage = (sql: SqlClient.SqlClient, after: string, limit: number) =>
  sql`SELECT id FROM monitors WHERE id > ${after} ORDER BY id LIMIT ${limit}`.pipe(
    decodeRows(IdRow),
    Effect.map((rows) => rows.map((row) => row.id))
  )

/** Which of `monitorIds` (not empty) are active and down. */
export const activeDown = (sql: SqlClient.SqlClient, monitorIds: ReadonlyArray<string>) =>
  sql`SELECT id FROM monitors WHERE id IN ${sql.in([...monitorIds])} AND active AND status = 'down'`.pipe(
    decodeRows(IdRow),
    Effect.map(ids)
  )

/** Which of `monitorIds` (not empty) are monitors. */
export const existingIds = (sql: SqlClient.SqlClient, monitorIds: ReadonlyArray<string>) =>
  sql`SELECT id FROM monitors WHERE id IN ${sql.in([...monitorIds])}`.pipe(decodeRows(IdRow), Effect.map(ids))

export const alertMonitor = (sql: SqlClient.SqlClient, id: string) =>
  sql`
    SELECT id, org_id AS "orgId", name, url, coalesce(alert_emails, '[]'::jsonb) AS "alertEmails"
    FROM monitors WHERE id = ${id}`.pipe(decodeRows(AlertMonitor), Effect.map(first))
