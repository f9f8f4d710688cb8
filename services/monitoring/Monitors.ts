import { Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { NotFound, ValidationError } from "../../schemas/Errors.ts"
import {
  type CheckType,
  type CreateMonitor,
  type DnsRecordType,
  type FieldIssue,
  type Heartbeat,
  type HeartbeatList,
  type HeartbeatStatus,
  type HttpMethod,
  type Monitor,
  MONITOR_DEFAULTS,
  type MonitorAssertion,
  MonitorChangedEvent,
  type MonitorList,
  monitorRuleIssues,
  type MonitorStatus,
  monitorValidationError,
  type UpdateMonitor
} from "../../schemas/Monitoring.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { publish } from "../platform/Events.ts"
import { makeId } from "../platform/Ids.ts"
import { privateTargetIssue } from "./PrivateTarget.ts"
import { accountInterval, Uptime, type UptimeWindow } from "./Uptime.ts"

/** A `monitors` row as the driver returns it (jsonb parsed, timestamptz as Date). */
export interface MonitorRow {
  readonly id: string
  readonly org_id: string
  readonly name: string
  readonly url: string
  readonly method: string
  readonly check_type: string
  readonly frequency: number
  readonly timeout: number
  readonly expected_code: number
  readonly headers: Record<string, string> | null
  readonly body: string | null
  readonly assertions: ReadonlyArray<MonitorAssertion> | null
  readonly dns_record_type: string | null
  readonly expected_value: string | null
  readonly degraded_threshold_ms: number | null
  readonly retries: number
  readonly retry_interval: number
  readonly active: boolean
  readonly status: string
  readonly consecutive_failures: number
  readonly next_check_at: Date
  readonly last_checked_at: Date | null
  readonly status_since: Date
  readonly created_at: Date
  readonly updated_at: Date
}

/**
 * Everything stored about a monitor, typed: what the monitor entity and check recorder
 * need to schedule and run checks. `frequency`, `timeout` and `retryInterval` are seconds.
 */
export interface MonitorConfig {
  readonly id: string
  readonly orgId: string
  readonly name: string
  readonly url: string
  readonly method: HttpMethod
  readonly checkType: CheckType
  readonly frequency: number
  readonly timeout: number
  readonly expectedCode: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | null
  readonly assertions: ReadonlyArray<MonitorAssertion> | null
  readonly dnsRecordType: DnsRecordType | null
  readonly expectedValue: string | null
  readonly degradedThresholdMs: number | null
  readonly retries: number
  readonly retryInterval: number
  readonly active: boolean
  readonly status: MonitorStatus
  readonly consecutiveFailures: number
  /** The next slot to check (claimed by compare-and-swap by the scheduler). */
  readonly nextCheckAt: Date
  readonly lastCheckedAt: Date | null
  /** Start of the interval not yet accounted in the uptime rollups (see `Uptime.ts`). */
  readonly statusSince: Date
  readonly createdAt: Date
  readonly updatedAt: Date
}

export const toMonitorConfig = (row: MonitorRow): MonitorConfig => ({
  id: row.id,
  orgId: row.org_id,
  name: row.name,
  url: row.url,
  method: row.method as HttpMethod,
  checkType: row.check_type as CheckType,
  frequency: row.frequency,
  timeout: row.timeout,
  expectedCode: row.expected_code,
  headers: row.headers ?? {},
  body: row.body,
  assertions: row.assertions,
  dnsRecordType: row.dns_record_type as DnsRecordType | null,
  expectedValue: row.expected_value,
  degradedThresholdMs: row.degraded_threshold_ms,
  retries: row.retries,
  retryInterval: row.retry_interval,
  active: row.active,
  status: row.status as MonitorStatus,
  consecutiveFailures: row.consecutive_failures,
  nextCheckAt: row.next_check_at,
  lastCheckedAt: row.last_checked_at,
  statusSince: row.status_since,
  createdAt: row.created_at,
  updatedAt: row.updated_at
})

/**
 * Reads one monitor's full configuration, without an organization check (internal use by
 * the scheduler). `forUpdate` locks the row until the caller's transaction ends.
 */
export const loadMonitorConfig = (
  id: string,
  options?: { readonly forUpdate?: boolean | undefined }
): Effect.Effect<Option.Option<MonitorConfig>, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<MonitorRow>`
      SELECT * FROM monitors WHERE id = ${id} ${
      options?.forUpdate === true ? sql.literal("FOR UPDATE") : sql.literal("")
    }`
    return rows.length === 0 ? Option.none() : Option.some(toMonitorConfig(rows[0]))
  })

/** Heartbeats returned with a monitor fetched by id (GUIDE §6). */
export const RECENT_HEARTBEATS = 50

/** Percentages are floored to 3 decimals, so a monitor with any downtime never shows 100. */
export const roundUptime = (percent: number): number => Math.floor(percent * 1000 + 1e-6) / 1000

interface HeartbeatRow {
  readonly checked_at: Date
  readonly status: string
  readonly response_time_ms: number
  readonly status_code: number | null
  readonly error: string | null
  readonly region: string
}

export const toHeartbeat = (row: HeartbeatRow): Heartbeat => ({
  timestamp: row.checked_at.toISOString(),
  status: row.status as HeartbeatStatus,
  responseTime: row.response_time_ms,
  region: row.region,
  ...(row.status_code !== null ? { statusCode: row.status_code } : {}),
  ...(row.error !== null ? { error: row.error } : {})
})

type UptimeFigures = { readonly uptime24h: number; readonly uptime7d?: number; readonly uptime30d?: number }

type MonitorChange = typeof MonitorChangedEvent.data.Type["change"]

const sendsHttpRequest = (checkType: CheckType) => checkType === "http" || checkType === "api"

export const toMonitor = (
  config: MonitorConfig,
  uptime: UptimeFigures,
  heartbeats?: ReadonlyArray<Heartbeat>
): Monitor => ({
  id: config.id,
  name: config.name,
  url: config.url,
  method: sendsHttpRequest(config.checkType) ? config.method : null,
  checkType: config.checkType,
  frequency: config.frequency,
  timeout: config.timeout,
  expectedCode: sendsHttpRequest(config.checkType) ? config.expectedCode : null,
  headers: config.headers,
  body: config.body,
  active: config.active,
  status: config.status,
  assertions: config.assertions,
  dnsRecordType: config.dnsRecordType,
  expectedValue: config.expectedValue,
  degradedThresholdMs: config.degradedThresholdMs,
  retries: config.retries,
  retryInterval: config.retryInterval,
  uptime24h: roundUptime(uptime.uptime24h),
  ...(uptime.uptime7d !== undefined ? { uptime7d: roundUptime(uptime.uptime7d) } : {}),
  ...(uptime.uptime30d !== undefined ? { uptime30d: roundUptime(uptime.uptime30d) } : {}),
  lastCheckedAt: config.lastCheckedAt?.toISOString() ?? null,
  createdAt: config.createdAt.toISOString(),
  updatedAt: config.updatedAt.toISOString(),
  ...(heartbeats !== undefined ? { heartbeats } : {})
})

export interface ListMonitorsOptions {
  readonly active?: boolean | undefined
  /** 1–100, default 50. */
  readonly limit?: number | undefined
  /** ≥ 0, default 0. */
  readonly offset?: number | undefined
}

export interface ListHeartbeatsOptions {
  /** Inclusive lower bound on the check time. */
  readonly from?: Date | undefined
  /** Inclusive upper bound on the check time. */
  readonly to?: Date | undefined
  /** 1–1000, default 100. */
  readonly limit?: number | undefined
}

const clamp = (value: number | undefined, fallback: number, min: number, max: number) =>
  value === undefined || !Number.isFinite(value) ? fallback : Math.min(max, Math.max(min, Math.trunc(value)))

const json = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value))

/**
 * Monitors of an organization (spec "Monitors"): CRUD with soft delete, reads with uptime
 * and heartbeats. Every method is scoped by `orgId`; another organization's monitor is a
 * `NotFound`. Each write publishes `monitor.changed` in its transaction, which the monitor
 * entity reacts to (reload, reschedule, stop).
 *
 * Scheduling effects of a write (the entity reads them from the row):
 * - create: `next_check_at = now` (first check at once), status `pending` (`paused` if inactive);
 * - `active` true → false (PATCH or DELETE): status `paused`, the open uptime interval is
 *   closed in the old status, `status_since = now`;
 * - `active` false → true: status `pending`, `status_since = now`, `next_check_at = now`;
 * - `frequency` change: the next check moves to at most one new interval after the last
 *   check (never into the past: `max(now, last check + frequency)`), if that is earlier;
 * - `url` or `checkType` change: the consecutive-failure count restarts; other settings
 *   apply at the next check.
 */
export class Monitors extends Context.Service<Monitors, {
  create(orgId: string, input: CreateMonitor): Effect.Effect<Monitor, ValidationError>
  list(orgId: string, options?: ListMonitorsOptions): Effect.Effect<MonitorList>
  /** With uptime over 24 h, 7 d and 30 d and the 50 newest heartbeats. */
  get(orgId: string, id: string): Effect.Effect<Monitor, NotFound>
  update(orgId: string, id: string, patch: UpdateMonitor): Effect.Effect<Monitor, NotFound | ValidationError>
  /** Soft delete: `active` false, status `paused`, data kept. Idempotent. */
  remove(orgId: string, id: string): Effect.Effect<void, NotFound>
  /** Newest first; `count` is the total in the range. */
  heartbeats(orgId: string, id: string, options?: ListHeartbeatsOptions): Effect.Effect<HeartbeatList, NotFound>
  /** Internal: the full stored configuration, no organization check. */
  loadMonitor(id: string): Effect.Effect<Option.Option<MonitorConfig>>
}>()("canopy/monitoring/Monitors") {
  static readonly layer = Layer.effect(
    Monitors,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const uptime = yield* Uptime
      const { outboundAllowPrivate } = yield* AppConfig
      /** The URL rules plus the private-address rule, reported once per field. */
      const withPrivateTarget = (issues: ReadonlyArray<FieldIssue>, checkType: CheckType, url: string) => {
        const blocked = issues.some((issue) => issue.field === "url")
          ? undefined
          : privateTargetIssue(checkType, url, outboundAllowPrivate)
        return blocked === undefined ? issues : [...issues, blocked]
      }
      const notFound = (id: string) => new NotFound({ message: `Monitor '${id}' not found` })
      const nowDate = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

      const allWindows: ReadonlyArray<UptimeWindow> = ["24h", "7d", "30d"]
      const withAllUptimes = (config: MonitorConfig) =>
        Effect.map(uptime.uptime([config.id], allWindows), (figures) => {
          const own = figures.get(config.id)
          return {
            uptime24h: own?.["24h"] ?? 100,
            uptime7d: own?.["7d"] ?? 100,
            uptime30d: own?.["30d"] ?? 100
          }
        })

      const create = Effect.fn("Monitors.create")(function*(orgId: string, input: CreateMonitor) {
        const checkType = input.checkType ?? MONITOR_DEFAULTS.checkType
        const frequency = input.frequency ?? MONITOR_DEFAULTS.frequency
        const timeout = input.timeout ?? MONITOR_DEFAULTS.timeout
        const issues = withPrivateTarget(
          monitorRuleIssues({ ...input, checkType, frequency, timeout }),
          checkType,
          input.url
        )
        if (issues.length > 0) return yield* monitorValidationError(issues)
        const active = input.active ?? MONITOR_DEFAULTS.active
        const now = (yield* nowDate).toISOString()
        const id = makeId("mon")
        const row = yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql<MonitorRow>`
            INSERT INTO monitors (
              id, org_id, name, url, method, check_type, frequency, timeout, expected_code, headers, body,
              assertions, dns_record_type, expected_value, degraded_threshold_ms, retries, retry_interval,
              active, status, next_check_at, status_since, created_at, updated_at
            ) VALUES (
              ${id}, ${orgId}, ${input.name}, ${input.url}, ${input.method ?? MONITOR_DEFAULTS.method},
              ${checkType}, ${frequency}, ${timeout}, ${input.expectedCode ?? MONITOR_DEFAULTS.expectedCode},
              ${JSON.stringify(input.headers ?? {})}::jsonb, ${input.body ?? null},
              ${json(input.assertions)}::jsonb, ${input.dnsRecordType ?? null}, ${input.expectedValue ?? null},
              ${input.degradedThresholdMs ?? null}, ${input.retries ?? MONITOR_DEFAULTS.retries},
              ${input.retryInterval ?? MONITOR_DEFAULTS.retryInterval},
              ${active}, ${active ? "pending" : "paused"}, ${now}::timestamptz, ${now}::timestamptz,
              ${now}::timestamptz, ${now}::timestamptz
            )
            RETURNING *`
          yield* publish(MonitorChangedEvent.make(orgId, { monitorId: id, orgId, change: "created" })).pipe(
            Effect.provideService(SqlClient.SqlClient, sql)
          )
          return rows[0]
        })).pipe(Effect.orDie)
        // A new monitor has no uptime data yet.
        return toMonitor(toMonitorConfig(row), { uptime24h: 100, uptime7d: 100, uptime30d: 100 })
      })

      const list = Effect.fn("Monitors.list")(function*(orgId: string, options?: ListMonitorsOptions) {
        const limit = clamp(options?.limit, 50, 1, 100)
        const offset = clamp(options?.offset, 0, 0, Number.MAX_SAFE_INTEGER)
        const activeFilter = options?.active === undefined ? sql.literal("") : sql`AND active = ${options.active}`
        const rows = yield* sql<MonitorRow & { readonly total: number | string }>`
          SELECT *, count(*) OVER () AS total FROM monitors
          WHERE org_id = ${orgId} ${activeFilter}
          ORDER BY created_at DESC, id DESC
          LIMIT ${limit} OFFSET ${offset}`.pipe(Effect.orDie)
        let count = rows.length > 0 ? Number(rows[0].total) : 0
        if (rows.length === 0 && offset > 0) {
          const counted = yield* sql<{ total: number | string }>`
            SELECT count(*) AS total FROM monitors WHERE org_id = ${orgId} ${activeFilter}`.pipe(Effect.orDie)
          count = Number(counted[0].total)
        }
        const figures = yield* uptime.uptime(rows.map((row) => row.id), ["24h"])
        return {
          monitors: rows.map((row) =>
            toMonitor(toMonitorConfig(row), { uptime24h: figures.get(row.id)?.["24h"] ?? 100 })
          ),
          count
        }
      })

      const recentHeartbeats = (id: string) =>
        sql<HeartbeatRow>`
          SELECT checked_at, status, response_time_ms, status_code, error, region FROM heartbeats
          WHERE monitor_id = ${id} ORDER BY checked_at DESC, id DESC LIMIT ${RECENT_HEARTBEATS}`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.map(toHeartbeat))
        )

      const findOwned = (orgId: string, id: string) =>
        sql<MonitorRow>`SELECT * FROM monitors WHERE id = ${id} AND org_id = ${orgId}`.pipe(
          Effect.orDie,
          Effect.flatMap((rows) =>
            rows.length === 0 ? Effect.fail(notFound(id)) : Effect.succeed(toMonitorConfig(rows[0]))
          )
        )

      const get = Effect.fn("Monitors.get")(function*(orgId: string, id: string) {
        const config = yield* findOwned(orgId, id)
        const [figures, heartbeats] = yield* Effect.all([withAllUptimes(config), recentHeartbeats(id)], {
          concurrency: 2
        })
        return toMonitor(config, figures, heartbeats)
      })

      /** Applies a patch in one transaction; returns the stored result. */
      const applyUpdate = (orgId: string, id: string, patch: UpdateMonitor, change: MonitorChange) =>
        sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql<MonitorRow>`
            SELECT * FROM monitors WHERE id = ${id} AND org_id = ${orgId} FOR UPDATE`.pipe(Effect.orDie)
          if (rows.length === 0) return yield* notFound(id)
          const current = toMonitorConfig(rows[0])
          const has = <K extends keyof UpdateMonitor>(key: K) => patch[key] !== undefined
          const next = {
            name: patch.name ?? current.name,
            url: patch.url ?? current.url,
            method: patch.method ?? current.method,
            checkType: patch.checkType ?? current.checkType,
            frequency: patch.frequency ?? current.frequency,
            timeout: patch.timeout ?? current.timeout,
            expectedCode: patch.expectedCode ?? current.expectedCode,
            headers: patch.headers ?? current.headers,
            body: has("body") ? patch.body ?? null : current.body,
            assertions: has("assertions") ? patch.assertions ?? null : current.assertions,
            dnsRecordType: has("dnsRecordType") ? patch.dnsRecordType ?? null : current.dnsRecordType,
            expectedValue: has("expectedValue") ? patch.expectedValue ?? null : current.expectedValue,
            degradedThresholdMs: has("degradedThresholdMs")
              ? patch.degradedThresholdMs ?? null
              : current.degradedThresholdMs,
            retries: patch.retries ?? current.retries,
            retryInterval: patch.retryInterval ?? current.retryInterval,
            active: patch.active ?? current.active
          }
          const issues = has("url") || has("checkType")
            ? withPrivateTarget(monitorRuleIssues(next), next.checkType, next.url)
            : monitorRuleIssues(next)
          if (issues.length > 0) return yield* monitorValidationError(issues)

          const now = yield* nowDate
          let status = current.status
          let statusSince = current.statusSince
          let nextCheckAt = current.nextCheckAt
          let failures = current.consecutiveFailures
          if (current.active && !next.active) {
            // Close the open uptime interval in the old status; paused time counts nowhere.
            yield* accountInterval(sql, { monitorId: id, from: current.statusSince, to: now, status: current.status })
              .pipe(Effect.orDie)
            status = "paused"
            statusSince = now
            failures = 0
          } else if (!current.active && next.active) {
            status = "pending"
            statusSince = now
            nextCheckAt = now
            failures = 0
          } else if (next.active && next.frequency !== current.frequency) {
            const base = current.lastCheckedAt ?? now
            const candidate = Math.max(now.getTime(), base.getTime() + next.frequency * 1000)
            if (candidate < nextCheckAt.getTime()) nextCheckAt = new Date(candidate)
          }
          if (next.url !== current.url || next.checkType !== current.checkType) failures = 0

          const updated = yield* sql<MonitorRow>`
            UPDATE monitors SET
              name = ${next.name}, url = ${next.url}, method = ${next.method}, check_type = ${next.checkType},
              frequency = ${next.frequency}, timeout = ${next.timeout}, expected_code = ${next.expectedCode},
              headers = ${JSON.stringify(next.headers)}::jsonb, body = ${next.body},
              assertions = ${json(next.assertions)}::jsonb, dns_record_type = ${next.dnsRecordType},
              expected_value = ${next.expectedValue}, degraded_threshold_ms = ${next.degradedThresholdMs},
              retries = ${next.retries}, retry_interval = ${next.retryInterval}, active = ${next.active},
              status = ${status}, status_since = ${statusSince.toISOString()}::timestamptz,
              next_check_at = ${nextCheckAt.toISOString()}::timestamptz, consecutive_failures = ${failures},
              updated_at = ${now.toISOString()}::timestamptz
            WHERE id = ${id}
            RETURNING *`.pipe(Effect.orDie)
          yield* publish(MonitorChangedEvent.make(orgId, { monitorId: id, orgId, change })).pipe(
            Effect.provideService(SqlClient.SqlClient, sql),
            Effect.orDie
          )
          return toMonitorConfig(updated[0])
        })).pipe(
          Effect.catchTag("SqlError", Effect.die)
        )

      const update = Effect.fn("Monitors.update")(function*(orgId: string, id: string, patch: UpdateMonitor) {
        const config = yield* applyUpdate(orgId, id, patch, "updated")
        return toMonitor(config, yield* withAllUptimes(config))
      })

      const remove = Effect.fn("Monitors.remove")(function*(orgId: string, id: string) {
        // Deactivating breaks no cross-field rule: a stored monitor is valid.
        yield* applyUpdate(orgId, id, { active: false }, "deleted").pipe(
          Effect.catch((error) => error instanceof ValidationError ? Effect.die(error) : Effect.fail(error))
        )
      })

      const heartbeats = Effect.fn("Monitors.heartbeats")(
        function*(orgId: string, id: string, options?: ListHeartbeatsOptions) {
          yield* findOwned(orgId, id)
          const limit = clamp(options?.limit, 100, 1, 1000)
          const range = sql.and([
            sql`monitor_id = ${id}`,
            ...(options?.from !== undefined ? [sql`checked_at >= ${options.from.toISOString()}::timestamptz`] : []),
            ...(options?.to !== undefined ? [sql`checked_at <= ${options.to.toISOString()}::timestamptz`] : [])
          ])
          const [rows, counted] = yield* Effect.all([
            sql<HeartbeatRow>`
              SELECT checked_at, status, response_time_ms, status_code, error, region FROM heartbeats
              WHERE ${range} ORDER BY checked_at DESC, id DESC LIMIT ${limit}`,
            sql<{ total: number | string }>`SELECT count(*) AS total FROM heartbeats WHERE ${range}`
          ], { concurrency: 2 }).pipe(Effect.orDie)
          return { heartbeats: rows.map(toHeartbeat), count: Number(counted[0].total) }
        }
      )

      const loadMonitor = (id: string) =>
        loadMonitorConfig(id).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie)

      return Monitors.of({ create, list, get, update, remove, heartbeats, loadMonitor })
    })
  )
}
