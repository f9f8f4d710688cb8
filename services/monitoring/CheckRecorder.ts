import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { HeartbeatEvent, MonitorStatusEvent } from "../../schemas/Monitoring.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { Events, type NewDomainEvent } from "../platform/Events.ts"
import type { CheckAssertion, CheckResult, CheckTarget, CheckType, DnsRecordType } from "./checks/Checker.ts"
import { type MonitorStatus, type Transition, transition } from "./MonitorState.ts"
import { accountInterval } from "./Uptime.ts"

/**
 * The SQL side of a monitor's schedule (the `Monitor` entity decides the timing):
 *
 * - `claim` takes a slot by compare-and-swap on `monitors.next_check_at`: exactly one
 *   caller — whichever runner, even two at once during a shard hand-off — moves it from
 *   the slot it saw to the next one, and only that caller runs the slot's check;
 * - `record` writes one attempt in one transaction: the heartbeat (unique per monitor,
 *   slot and attempt, so a replay is a no-op), the monitor's new status, the elapsed
 *   interval in the hourly uptime rollup, and the `heartbeat` / `monitor.status` domain
 *   events.
 *
 * Timestamps cross the boundary as epoch milliseconds. Postgres keeps microseconds
 * (`now()` defaults), so comparisons truncate to milliseconds.
 */

/** What the schedule loop needs to know between checks. */
export interface MonitorSchedule {
  readonly id: string
  readonly active: boolean
  /** The slot to check next (epoch ms, truncated). */
  readonly nextCheckAt: number
  readonly frequency: number
  readonly retryInterval: number
  readonly status: MonitorStatus
}

/** A claimed slot: the monitor's configuration at claim time and the slot it owns. */
export interface ClaimedSlot {
  readonly monitorId: string
  readonly slotAt: number
  /** `next_check_at` after the claim. */
  readonly nextCheckAt: number
  readonly frequency: number
  readonly retryInterval: number
  readonly target: CheckTarget
}

export interface AttemptInput {
  readonly monitorId: string
  readonly slotAt: number
  /** 0 for the scheduled check, 1, 2, … for retries of the same slot. */
  readonly attempt: number
  /** When the check started (epoch ms). */
  readonly checkedAt: number
  readonly result: CheckResult
}

export type RecordOutcome =
  | { readonly _tag: "Recorded"; readonly transition: Transition; readonly status: MonitorStatus }
  /** Nothing written: the attempt was already recorded, or the monitor is gone or inactive. */
  | { readonly _tag: "Skipped"; readonly reason: "duplicate" | "inactive" }

interface MonitorRow {
  readonly id: string
  readonly orgId: string
  readonly active: boolean
  readonly checkType: string
  readonly url: string
  readonly method: string
  readonly headers: unknown
  readonly body: string | null
  readonly expectedCode: number
  readonly timeout: number
  readonly assertions: unknown
  readonly dnsRecordType: string | null
  readonly expectedValue: string | null
  readonly frequency: number
  readonly retryInterval: number
  readonly nextCheckAt: number
}

const parseJson = (value: unknown): unknown => {
  if (typeof value !== "string") return value
  try {
    return JSON.parse(value)
  } catch {
    return undefined
  }
}

const toHeaders = (value: unknown): Record<string, string> => {
  const parsed = parseJson(value)
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return {}
  const headers: Record<string, string> = {}
  for (const [name, header] of Object.entries(parsed)) {
    if (typeof header === "string") headers[name] = header
    else if (typeof header === "number" || typeof header === "boolean") headers[name] = String(header)
  }
  return headers
}

/** The checker's input from a `monitors` row. */
export const toCheckTarget = (row: MonitorRow): CheckTarget => {
  const assertions = parseJson(row.assertions)
  return {
    checkType: row.checkType as CheckType,
    url: row.url,
    method: row.method,
    headers: toHeaders(row.headers),
    body: row.body ?? undefined,
    expectedCode: row.expectedCode,
    timeoutSeconds: row.timeout,
    assertions: Array.isArray(assertions) ? (assertions as ReadonlyArray<CheckAssertion>) : undefined,
    dnsRecordType: (row.dnsRecordType ?? undefined) as DnsRecordType | undefined,
    expectedValue: row.expectedValue ?? undefined
  }
}

const ms = (column: string) => `floor(extract(epoch FROM ${column}) * 1000)::float8`

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const events = yield* Events
  const { region } = yield* AppConfig

  const rowColumns = sql.literal(`
    id, org_id AS "orgId", active, check_type AS "checkType", url, method, headers, body,
    expected_code AS "expectedCode", timeout, assertions, dns_record_type AS "dnsRecordType",
    expected_value AS "expectedValue", frequency, retry_interval AS "retryInterval",
    ${ms("next_check_at")} AS "nextCheckAt"`)

  const loadSchedule = (monitorId: string): Effect.Effect<Option.Option<MonitorSchedule>, SqlError> =>
    Effect.map(
      sql<MonitorSchedule>`
        SELECT id, active, ${sql.literal(ms("next_check_at"))} AS "nextCheckAt", frequency,
          retry_interval AS "retryInterval", status
        FROM monitors WHERE id = ${monitorId}`,
      (rows) => Option.fromUndefinedOr(rows[0])
    )

  const claim = (options: {
    readonly monitorId: string
    /** The `next_check_at` the caller saw. */
    readonly expected: number
    /** The slot to check (the expected one, or a later one of its grid after downtime). */
    readonly slotAt: number
    /** Frequency the caller saw; a concurrent change makes the claim fail (re-read). */
    readonly frequency: number
  }): Effect.Effect<Option.Option<ClaimedSlot>, SqlError> =>
    Effect.map(
      sql<MonitorRow>`
        UPDATE monitors SET next_check_at = ${new Date(options.slotAt + options.frequency * 1000)}
        WHERE id = ${options.monitorId}
          AND date_trunc('milliseconds', next_check_at) = ${new Date(options.expected)}
          AND frequency = ${options.frequency}
          AND active
        RETURNING ${rowColumns}`,
      (rows) =>
        Option.map(Option.fromUndefinedOr(rows[0]), (row) => ({
          monitorId: row.id,
          slotAt: options.slotAt,
          nextCheckAt: row.nextCheckAt,
          frequency: row.frequency,
          retryInterval: row.retryInterval,
          target: toCheckTarget(row)
        }))
    )

  /** Moves `next_check_at` from `expected` to `next` (a frequency change); false if it moved meanwhile. */
  const reschedule = (options: {
    readonly monitorId: string
    readonly expected: number
    readonly next: number
  }): Effect.Effect<boolean, SqlError> =>
    Effect.map(
      sql`
        UPDATE monitors SET next_check_at = ${new Date(options.next)}
        WHERE id = ${options.monitorId} AND date_trunc('milliseconds', next_check_at) = ${new Date(options.expected)}
          AND active
        RETURNING id`,
      (rows) => rows.length > 0
    )

  /** The slot of the newest heartbeat (epoch ms), if any. */
  const lastSlotAt = (monitorId: string): Effect.Effect<Option.Option<number>, SqlError> =>
    Effect.map(
      sql<{ readonly slotAt: number }>`
        SELECT ${sql.literal(ms("slot_at"))} AS "slotAt" FROM heartbeats
        WHERE monitor_id = ${monitorId} ORDER BY checked_at DESC LIMIT 1`,
      (rows) => Option.map(Option.fromUndefinedOr(rows[0]), (row) => row.slotAt)
    )

  /** The current check target for a retry, if the monitor is still active. */
  const loadTarget = (monitorId: string): Effect.Effect<Option.Option<CheckTarget>, SqlError> =>
    Effect.map(
      sql<MonitorRow>`SELECT ${rowColumns} FROM monitors WHERE id = ${monitorId} AND active`,
      (rows) => Option.map(Option.fromUndefinedOr(rows[0]), toCheckTarget)
    )

  const record = (input: AttemptInput): Effect.Effect<RecordOutcome, SqlError> =>
    sql.withTransaction(Effect.gen(function*() {
      const [monitor] = yield* sql<{
        readonly orgId: string
        readonly name: string
        readonly active: boolean
        readonly status: MonitorStatus
        readonly consecutiveFailures: number
        readonly retries: number
        readonly degradedThresholdMs: number | null
        readonly lastCheckedAt: number | null
        readonly statusSince: number
      }>`
        SELECT org_id AS "orgId", name, active, status, consecutive_failures AS "consecutiveFailures", retries,
          degraded_threshold_ms AS "degradedThresholdMs",
          ${sql.literal(ms("last_checked_at"))} AS "lastCheckedAt",
          ${sql.literal(ms("status_since"))} AS "statusSince"
        FROM monitors WHERE id = ${input.monitorId} FOR UPDATE`
      if (monitor === undefined || !monitor.active) return { _tag: "Skipped", reason: "inactive" } as const

      const { result } = input
      const next = transition(monitor, result, monitor.degradedThresholdMs)
      const checkedAt = new Date(input.checkedAt)
      const inserted = yield* sql`
        INSERT INTO heartbeats (monitor_id, slot_at, attempt, checked_at, status, response_time_ms, status_code, error, region)
        VALUES (${input.monitorId}, ${new Date(input.slotAt)}, ${input.attempt}, ${checkedAt}, ${next.heartbeatStatus},
          ${Math.max(0, Math.round(result.responseTimeMs))}, ${result.statusCode ?? null}, ${result.error ?? null},
          ${region})
        ON CONFLICT (monitor_id, slot_at, attempt) DO NOTHING
        RETURNING id`
      if (inserted.length === 0) return { _tag: "Skipped", reason: "duplicate" } as const

      // A result older than the last one recorded (a check that outlived a shard hand-off)
      // keeps its heartbeat but does not move the status back in time.
      const stale = monitor.lastCheckedAt !== null && input.checkedAt < monitor.lastCheckedAt
      const applied: Transition = stale
        ? {
          ...next,
          status: monitor.status,
          consecutiveFailures: monitor.consecutiveFailures,
          changed: false,
          retry: false
        }
        : next

      if (!stale) {
        // Uptime (see Uptime.ts): close the open interval [status_since, checkedAt) in the
        // status held so far, count this attempt in its hour, and open the next interval.
        const responseTimeMs = Math.max(0, Math.round(result.responseTimeMs))
        yield* accountInterval(sql, {
          monitorId: input.monitorId,
          from: new Date(monitor.statusSince),
          to: checkedAt,
          status: monitor.status,
          checks: 1,
          failed: next.heartbeatStatus === "down" ? 1 : 0,
          responseTimeMs,
          checkedAt
        })
        yield* sql`
          UPDATE monitors SET
            status = ${applied.status},
            consecutive_failures = ${applied.consecutiveFailures},
            last_checked_at = ${checkedAt},
            status_since = greatest(status_since, ${checkedAt}::timestamptz)
          WHERE id = ${input.monitorId}`
      }

      const timestamp = checkedAt.toISOString()
      const published: Array<NewDomainEvent> = [HeartbeatEvent.make(monitor.orgId, {
        monitorId: input.monitorId,
        timestamp,
        status: next.heartbeatStatus,
        responseTime: Math.max(0, Math.round(result.responseTimeMs)),
        ...(result.statusCode === undefined ? {} : { statusCode: result.statusCode }),
        ...(result.error === undefined ? {} : { error: result.error }),
        region,
        attempt: input.attempt
      })]
      if (applied.changed) {
        published.push(MonitorStatusEvent.make(monitor.orgId, {
          monitorId: input.monitorId,
          name: monitor.name,
          status: applied.status,
          previousStatus: monitor.status,
          timestamp
        }))
      }
      // In the same transaction: the events commit with the heartbeat or not at all.
      yield* events.publishAll(published).pipe(Effect.provideService(SqlClient.SqlClient, sql))
      return { _tag: "Recorded", transition: applied, status: applied.status } as const
    }))

  /**
   * The schedule of every active monitor on the given shards (the wake-up sweep), plus
   * those whose shard is not known yet for `shardCount` shards (`shard` null: assign it).
   */
  const activeSchedules = (shards: ReadonlyArray<number>, shardCount: number) =>
    sql<MonitorSchedule & { readonly shard: number | null }>`
      SELECT id, active, ${sql.literal(ms("next_check_at"))} AS "nextCheckAt", frequency,
        retry_interval AS "retryInterval", status,
        CASE WHEN shard_count = ${shardCount} THEN shard END AS shard
      FROM monitors
      WHERE active AND (shard = ANY(${shards}::int[]) OR shard IS NULL OR shard_count <> ${shardCount})`

  /** Records the shard of each monitor (computed by the cluster from its id). */
  const assignShards = (assigned: ReadonlyArray<{ readonly id: string; readonly shard: number }>, shardCount: number) =>
    assigned.length === 0 ? Effect.void : sql`
      UPDATE monitors m SET shard = v.shard, shard_count = ${shardCount}
      FROM unnest(${assigned.map((a) => a.id)}::text[], ${assigned.map((a) => a.shard)}::int[]) AS v(id, shard)
      WHERE m.id = v.id`.pipe(Effect.asVoid)

  return CheckRecorder.of({
    loadSchedule,
    claim,
    reschedule,
    lastSlotAt,
    loadTarget,
    record,
    activeSchedules,
    assignShards
  })
})

export class CheckRecorder extends Context.Service<CheckRecorder, {
  readonly loadSchedule: (monitorId: string) => Effect.Effect<Option.Option<MonitorSchedule>, SqlError>
  readonly claim: (options: {
    readonly monitorId: string
    readonly expected: number
    readonly slotAt: number
    readonly frequency: number
  }) => Effect.Effect<Option.Option<ClaimedSlot>, SqlError>
  readonly reschedule: (options: {
    readonly monitorId: string
    readonly expected: number
    readonly next: number
  }) => Effect.Effect<boolean, SqlError>
  readonly lastSlotAt: (monitorId: string) => Effect.Effect<Option.Option<number>, SqlError>
  readonly loadTarget: (monitorId: string) => Effect.Effect<Option.Option<CheckTarget>, SqlError>
  readonly record: (input: AttemptInput) => Effect.Effect<RecordOutcome, SqlError>
  readonly activeSchedules: (
    shards: ReadonlyArray<number>,
    shardCount: number
  ) => Effect.Effect<ReadonlyArray<MonitorSchedule & { readonly shard: number | null }>, SqlError>
  readonly assignShards: (
    assigned: ReadonlyArray<{ readonly id: string; readonly shard: number }>,
    shardCount: number
  ) => Effect.Effect<void, SqlError>
}>()("canopy/monitoring/CheckRecorder") {
  static readonly layer: Layer.Layer<CheckRecorder, never, SqlClient.SqlClient | Events | AppConfig> = Layer.effect(
    CheckRecorder,
    make
  )
}
