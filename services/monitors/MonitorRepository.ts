import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type * as Statement from "effect/sql/Statement"
import type { MonitorStatus } from "../../schemas/monitors/Monitors.ts"
import { Int8, orDieOnSchema } from "../platform/Rows.ts"
import {
  AlertSubject,
  CheckState,
  MonitorHealth,
  MonitorRecord,
  MonitorSchedule,
  type MonitorWrite,
  ShardedSchedule,
  StatusSpan
} from "./MonitorRows.ts"

/** What `healthOfOrg` answers, for the status summary. */
export type { MonitorHealth }

/**
 * The one owner of the `monitors` table's SQL. Every row leaves here decoded by a Schema
 * (a row that does not match is a defect, not a silently wrong value); other services —
 * the API's `Monitors`, the scheduler's `CheckRecorder`, uptime, incidents, components,
 * the status summary and alerts — ask this service instead of querying the table.
 *
 * Timestamps the scheduler compares are epoch milliseconds, truncated (Postgres keeps
 * microseconds); the others are `Date`s.
 */

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

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const records = sql.literal(recordColumns)
  const schedules = sql.literal(scheduleColumns)

  const findRecord = SqlSchema.findOneOption({
    Request: Schema.Struct({ id: Schema.String, orgId: Schema.NullOr(Schema.String), lock: Schema.Boolean }),
    Result: MonitorRecord,
    execute: ({ id, lock, orgId }) =>
      sql`SELECT ${records} FROM monitors WHERE id = ${id} ${
        orgId === null ? sql.literal("") : sql`AND org_id = ${orgId}`
      }
        ${sql.literal(lock ? "FOR UPDATE" : "")}`
  })

  const listPage = SqlSchema.findAll({
    Request: Schema.Struct({
      orgId: Schema.String,
      active: Schema.NullOr(Schema.Boolean),
      limit: Schema.Int,
      offset: Schema.Int
    }),
    Result: Schema.Struct({ ...MonitorRecord.fields, total: Int8 }),
    execute: ({ active, limit, offset, orgId }) =>
      sql`SELECT ${records}, count(*) OVER () AS total FROM monitors
        WHERE org_id = ${orgId} ${active === null ? sql.literal("") : sql`AND active = ${active}`}
        ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`
  })

  const countOfOrg = SqlSchema.findOne({
    Request: Schema.Struct({ orgId: Schema.String, active: Schema.NullOr(Schema.Boolean) }),
    Result: Schema.Struct({ total: Int8 }),
    execute: ({ active, orgId }) =>
      sql`SELECT count(*) AS total FROM monitors
        WHERE org_id = ${orgId} ${active === null ? sql.literal("") : sql`AND active = ${active}`}`
  })

  const decodeRecord = Schema.decodeUnknownEffect(MonitorRecord)
  /** The row a write returned (an INSERT, or an UPDATE of a row the caller holds locked). */
  const returned = (rows: ReadonlyArray<unknown>) =>
    rows.length === 0 ? Effect.die(new Error("monitors: the write returned no row")) : decodeRecord(rows[0])

  const insertRecord = (id: string, orgId: string, values: MonitorWrite) =>
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
        RETURNING ${records}`.pipe(Effect.flatMap(returned))

  const updateRecord = (id: string, values: MonitorWrite) =>
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
        RETURNING ${records}`.pipe(Effect.flatMap(returned))

  const findSchedule = SqlSchema.findOneOption({
    Request: Schema.String,
    Result: MonitorSchedule,
    execute: (id) => sql`SELECT ${schedules} FROM monitors WHERE id = ${id}`
  })

  const claimSlot = SqlSchema.findOneOption({
    Request: Schema.Struct({ id: Schema.String, expected: Schema.Number, next: Schema.Number, frequency: Schema.Int }),
    Result: MonitorRecord,
    execute: ({ expected, frequency, id, next }) =>
      sql`
        UPDATE monitors SET next_check_at = ${new Date(next)}
        WHERE id = ${id} AND date_trunc('milliseconds', next_check_at) = ${new Date(expected)}
          AND frequency = ${frequency} AND active
        RETURNING ${records}`
  })

  const findActive = SqlSchema.findOneOption({
    Request: Schema.String,
    Result: MonitorRecord,
    execute: (id) => sql`SELECT ${records} FROM monitors WHERE id = ${id} AND active`
  })

  const lockCheckState = SqlSchema.findOneOption({
    Request: Schema.String,
    Result: CheckState,
    execute: (id) =>
      sql`
        SELECT org_id AS "orgId", name, active, status, consecutive_failures AS "consecutiveFailures", retries,
          degraded_threshold_ms AS "degradedThresholdMs", ${sql.literal(ms("last_checked_at"))} AS "lastCheckedAt",
          ${sql.literal(ms("status_since"))} AS "statusSince"
        FROM monitors WHERE id = ${id} FOR UPDATE`
  })

  const shardSchedules = SqlSchema.findAll({
    Request: Schema.Struct({ shards: Schema.Array(Schema.Int), shardCount: Schema.Int }),
    Result: ShardedSchedule,
    execute: ({ shardCount, shards }) =>
      sql`
        SELECT ${schedules}, CASE WHEN shard_count = ${shardCount} THEN shard END AS shard
        FROM monitors
        WHERE active AND (shard = ANY(${shards}::int[]) OR shard IS NULL OR shard_count <> ${shardCount})`
  })

  const ownedIds = SqlSchema.findAll({
    Request: Schema.Struct({ orgId: Schema.String, ids: Schema.Array(Schema.String) }),
    Result: Schema.Struct({ id: Schema.String }),
    execute: ({ ids, orgId }) => sql`SELECT id FROM monitors WHERE org_id = ${orgId} AND id IN ${sql.in(ids)}`
  })

  const healthOfOrg = SqlSchema.findAll({
    Request: Schema.String,
    Result: MonitorHealth,
    execute: (orgId) =>
      sql`SELECT id, name, status, last_checked_at AS "lastCheckedAt" FROM monitors
        WHERE org_id = ${orgId} AND active ORDER BY created_at, id`
  })

  const spans = SqlSchema.findAll({
    Request: Schema.Array(Schema.String),
    Result: StatusSpan,
    execute: (ids) => sql`SELECT id, status, status_since AS "statusSince" FROM monitors WHERE id IN ${sql.in(ids)}`
  })

  const idPage = SqlSchema.findAll({
    Request: Schema.Struct({ after: Schema.String, limit: Schema.Int }),
    Result: Schema.Struct({ id: Schema.String }),
    execute: ({ after, limit }) => sql`SELECT id FROM monitors WHERE id > ${after} ORDER BY id LIMIT ${limit}`
  })

  const activeDown = SqlSchema.findAll({
    Request: Schema.Array(Schema.String),
    Result: Schema.Struct({ id: Schema.String }),
    execute: (ids) => sql`SELECT id FROM monitors WHERE id IN ${sql.in(ids)} AND active AND status = 'down'`
  })

  const existingIds = SqlSchema.findAll({
    Request: Schema.Array(Schema.String),
    Result: Schema.Struct({ id: Schema.String }),
    execute: (ids) => sql`SELECT id FROM monitors WHERE id IN ${sql.in(ids)}`
  })

  const alertSubject = SqlSchema.findOneOption({
    Request: Schema.String,
    Result: AlertSubject,
    execute: (id) =>
      sql`
        SELECT m.id, m.org_id AS "orgId", m.name, m.url, o.slug, o.name AS "orgName",
          coalesce(m.alert_emails, '[]'::jsonb) AS "alertEmails"
        FROM monitors m JOIN organizations o ON o.id = m.org_id WHERE m.id = ${id}`
  })

  return MonitorRepository.of({
    find: (id, options) =>
      orDieOnSchema(findRecord({ id, orgId: options?.orgId ?? null, lock: options?.forUpdate === true })),
    listOfOrg: (orgId, options) =>
      Effect.gen(function*() {
        const active = options.active ?? null
        const rows = yield* listPage({ orgId, active, limit: options.limit, offset: options.offset })
        // An offset past the end returns no row to read the window count from.
        const count = rows.length > 0
          ? rows[0].total
          : options.offset > 0
          ? (yield* countOfOrg({ orgId, active })).total
          : 0
        return { records: rows.map(({ total: _, ...record }) => record), count }
      }).pipe(
        Effect.catchTag("NoSuchElementError", Effect.die),
        orDieOnSchema
      ),
    insert: (id, orgId, values) => orDieOnSchema(insertRecord(id, orgId, values)),
    update: (id, values) => orDieOnSchema(updateRecord(id, values)),
    schedule: (id) => orDieOnSchema(findSchedule(id)),
    claim: (options) =>
      orDieOnSchema(claimSlot({
        id: options.monitorId,
        expected: options.expected,
        next: options.next,
        frequency: options.frequency
      })),
    reschedule: (options) =>
      Effect.map(
        sql`
          UPDATE monitors SET next_check_at = ${new Date(options.next)}
          WHERE id = ${options.monitorId}
            AND date_trunc('milliseconds', next_check_at) = ${new Date(options.expected)} AND active
          RETURNING id`,
        (rows) => rows.length > 0
      ),
    findActive: (id) => orDieOnSchema(findActive(id)),
    lockCheckState: (id) => orDieOnSchema(lockCheckState(id)),
    applyCheck: (id, state, when = sql.literal("true")) =>
      sql`
        UPDATE monitors SET status = ${state.status}, consecutive_failures = ${state.consecutiveFailures},
          last_checked_at = ${state.checkedAt}, status_since = greatest(status_since, ${state.checkedAt}::timestamptz)
        WHERE id = ${id} AND ${when}`,
    shardSchedules: (shards, shardCount) => orDieOnSchema(shardSchedules({ shards, shardCount })),
    assignShards: (assigned, shardCount) =>
      assigned.length === 0 ? Effect.void : sql`
        UPDATE monitors m SET shard = v.shard, shard_count = ${shardCount}
        FROM unnest(${assigned.map((a) => a.id)}::text[], ${assigned.map((a) => a.shard)}::int[]) AS v(id, shard)
        WHERE m.id = v.id`.pipe(Effect.asVoid),
    ownedIds: (orgId, ids) =>
      ids.length === 0
        ? Effect.succeed(new Set<string>())
        : Effect.map(orDieOnSchema(ownedIds({ orgId, ids: [...new Set(ids)] })), (rows) =>
          new Set(rows.map((row) => row.id))),
    healthOfOrg: (orgId) => orDieOnSchema(healthOfOrg(orgId)),
    statusSpans: (ids) => ids.length === 0 ? Effect.succeed([]) : orDieOnSchema(spans(ids)),
    idPage: (after, limit) => Effect.map(orDieOnSchema(idPage({ after, limit })), (rows) => rows.map((row) => row.id)),
    activeDown: (ids) =>
      ids.length === 0
        ? Effect.succeed(new Set<string>())
        : Effect.map(orDieOnSchema(activeDown(ids)), (rows) => new Set(rows.map((row) => row.id))),
    existingIds: (ids) =>
      ids.length === 0
        ? Effect.succeed(new Set<string>())
        : Effect.map(orDieOnSchema(existingIds(ids)), (rows) => new Set(rows.map((row) => row.id))),
    alertSubject: (id) => orDieOnSchema(alertSubject(id))
  })
})

export class MonitorRepository extends Context.Service<MonitorRepository, {
  /** One monitor; with `orgId`, only if it belongs to that organization; `forUpdate` locks the row. */
  find(
    id: string,
    options?: { readonly orgId?: string | undefined; readonly forUpdate?: boolean | undefined }
  ): Effect.Effect<Option.Option<MonitorRecord>, SqlError>
  /** A page of an organization's monitors, newest first, and the total matching. */
  listOfOrg(orgId: string, options: {
    readonly active?: boolean | undefined
    readonly limit: number
    readonly offset: number
  }): Effect.Effect<{ readonly records: ReadonlyArray<MonitorRecord>; readonly count: number }, SqlError>
  insert(id: string, orgId: string, values: MonitorWrite): Effect.Effect<MonitorRecord, SqlError>
  update(id: string, values: MonitorWrite): Effect.Effect<MonitorRecord, SqlError>
  /** The scheduler's view of one monitor. */
  schedule(id: string): Effect.Effect<Option.Option<MonitorSchedule>, SqlError>
  /**
   * Takes a slot by compare-and-swap: moves `next_check_at` from `expected` (what the caller
   * saw) to `next` if the frequency is still `frequency` and the monitor active. Exactly one
   * caller wins; the winner gets the monitor as it is now.
   */
  claim(options: {
    readonly monitorId: string
    readonly expected: number
    readonly next: number
    readonly frequency: number
  }): Effect.Effect<Option.Option<MonitorRecord>, SqlError>
  /** Moves `next_check_at` from `expected` to `next`; false if it moved meanwhile. */
  reschedule(options: {
    readonly monitorId: string
    readonly expected: number
    readonly next: number
  }): Effect.Effect<boolean, SqlError>
  findActive(id: string): Effect.Effect<Option.Option<MonitorRecord>, SqlError>
  /** The state a check result applies to, the row locked until the transaction ends. */
  lockCheckState(id: string): Effect.Effect<Option.Option<CheckState>, SqlError>
  /**
   * Writes a check's effect on the monitor (the uptime interval restarts no earlier than
   * `checkedAt`), if `when` holds; a statement to run or to embed in a larger one as a CTE.
   */
  applyCheck(id: string, state: {
    readonly status: MonitorStatus
    readonly consecutiveFailures: number
    readonly checkedAt: Date
  }, when?: Statement.Fragment): Statement.Statement<unknown>
  /** Active monitors of the given shards, plus those whose shard is not recorded for `shardCount`. */
  shardSchedules(
    shards: ReadonlyArray<number>,
    shardCount: number
  ): Effect.Effect<ReadonlyArray<ShardedSchedule>, SqlError>
  assignShards(
    assigned: ReadonlyArray<{ readonly id: string; readonly shard: number }>,
    shardCount: number
  ): Effect.Effect<void, SqlError>
  /** Which of `ids` are monitors of `orgId` (active or not). */
  ownedIds(orgId: string, ids: ReadonlyArray<string>): Effect.Effect<ReadonlySet<string>, SqlError>
  /** An organization's active monitors, oldest first. */
  healthOfOrg(orgId: string): Effect.Effect<ReadonlyArray<MonitorHealth>, SqlError>
  statusSpans(ids: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<StatusSpan>, SqlError>
  /** Monitor ids after `after` in id order (every monitor, for paging jobs). */
  idPage(after: string, limit: number): Effect.Effect<ReadonlyArray<string>, SqlError>
  /** Which of `ids` are active and down. */
  activeDown(ids: ReadonlyArray<string>): Effect.Effect<ReadonlySet<string>, SqlError>
  /** Which of `ids` are monitors (of any organization, active or not). */
  existingIds(ids: ReadonlyArray<string>): Effect.Effect<ReadonlySet<string>, SqlError>
  alertSubject(id: string): Effect.Effect<Option.Option<AlertSubject>, SqlError>
}>()("canopy/monitors/MonitorRepository") {
  static readonly layer: Layer.Layer<MonitorRepository, never, SqlClient.SqlClient> = Layer.effect(
    MonitorRepository,
    make
  )
}
