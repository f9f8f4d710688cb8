import { Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import {
  type CheckType,
  type CreateMonitor,
  type FieldIssue,
  type Heartbeat,
  type HeartbeatList,
  type Monitor,
  MONITOR_DEFAULTS,
  MonitorChangedEvent,
  type MonitorList,
  monitorRuleIssues,
  monitorValidationError,
  type UpdateMonitor
} from "../../schemas/monitors/Monitors.ts"
import { NotFound, ValidationError } from "../../schemas/platform/Errors.ts"
import { publish } from "../events/Events.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { makeId } from "../platform/Ids.ts"
import {
  countHeartbeats,
  heartbeatPage,
  heartbeatRange,
  recentHeartbeats as recentRows,
  toHeartbeat
} from "./HeartbeatRows.ts"
import { MonitorRepository } from "./MonitorRepository.ts"
import type { MonitorRecord } from "./MonitorRows.ts"
import { slotAfterFrequencyChange } from "./MonitorState.ts"
import { privateTargetIssue } from "./PrivateTarget.ts"
import { accountInterval, Uptime, type UptimeWindow } from "./Uptime.ts"

/** Everything stored about a monitor (see `MonitorRepository`). */
export type MonitorConfig = MonitorRecord

/** Heartbeats returned with a monitor fetched by id (GUIDE §6). */
export const RECENT_HEARTBEATS = 50

/** Percentages are floored to 3 decimals, so a monitor with any downtime never shows 100. */
export const roundUptime = (percent: number): number => Math.floor(percent * 1000 + 1e-6) / 1000

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
  alertEmails: config.alertEmails,
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
}>()("canopy/monitors/Monitors") {
  static readonly layer = Layer.effect(
    Monitors,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const repository = yield* MonitorRepository
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
        const now = yield* nowDate
        const id = makeId("mon")
        const record = yield* sql.withTransaction(Effect.gen(function*() {
          const inserted = yield* repository.insert(id, orgId, {
            name: input.name,
            url: input.url,
            method: input.method ?? MONITOR_DEFAULTS.method,
            checkType,
            frequency,
            timeout,
            expectedCode: input.expectedCode ?? MONITOR_DEFAULTS.expectedCode,
            headers: input.headers ?? {},
            body: input.body ?? null,
            assertions: input.assertions ?? null,
            dnsRecordType: input.dnsRecordType ?? null,
            expectedValue: input.expectedValue ?? null,
            degradedThresholdMs: input.degradedThresholdMs ?? null,
            retries: input.retries ?? MONITOR_DEFAULTS.retries,
            retryInterval: input.retryInterval ?? MONITOR_DEFAULTS.retryInterval,
            alertEmails: input.alertEmails ?? [],
            active,
            status: active ? "pending" : "paused",
            consecutiveFailures: 0,
            nextCheckAt: now,
            statusSince: now,
            updatedAt: now
          })
          yield* publish(MonitorChangedEvent.make(orgId, { monitorId: id, orgId, change: "created" })).pipe(
            Effect.provideService(SqlClient.SqlClient, sql)
          )
          return inserted
        })).pipe(Effect.orDie)
        // A new monitor has no uptime data yet.
        return toMonitor(record, { uptime24h: 100, uptime7d: 100, uptime30d: 100 })
      })

      const list = Effect.fn("Monitors.list")(function*(orgId: string, options?: ListMonitorsOptions) {
        const limit = clamp(options?.limit, 50, 1, 100)
        const offset = clamp(options?.offset, 0, 0, Number.MAX_SAFE_INTEGER)
        const { count, records } = yield* repository.listOfOrg(orgId, { active: options?.active, limit, offset }).pipe(
          Effect.orDie
        )
        const figures = yield* uptime.uptime(records.map((record) => record.id), ["24h"])
        return {
          monitors: records.map((record) => toMonitor(record, { uptime24h: figures.get(record.id)?.["24h"] ?? 100 })),
          count
        }
      })

      const recentHeartbeats = (id: string) =>
        recentRows(sql, id, RECENT_HEARTBEATS).pipe(
          Effect.orDie,
          Effect.map((rows) => rows.map(toHeartbeat))
        )

      const findOwned = (orgId: string, id: string, forUpdate = false) =>
        repository.find(id, { orgId, forUpdate }).pipe(
          Effect.orDie,
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound(id)), onSome: Effect.succeed }))
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
          const current = yield* findOwned(orgId, id, true)
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
            alertEmails: patch.alertEmails ?? current.alertEmails,
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
            const candidate = slotAfterFrequencyChange(current.lastCheckedAt?.getTime(), next.frequency, now.getTime())
            if (candidate < nextCheckAt.getTime()) nextCheckAt = new Date(candidate)
          }
          if (next.url !== current.url || next.checkType !== current.checkType) failures = 0

          const updated = yield* repository.update(id, {
            ...next,
            status,
            statusSince,
            nextCheckAt,
            consecutiveFailures: failures,
            updatedAt: now
          }).pipe(Effect.orDie)
          yield* publish(MonitorChangedEvent.make(orgId, { monitorId: id, orgId, change })).pipe(
            Effect.provideService(SqlClient.SqlClient, sql),
            Effect.orDie
          )
          return updated
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
          const range = heartbeatRange(sql, id, { from: options?.from, to: options?.to })
          const [rows, count] = yield* Effect.all([heartbeatPage(sql, range, limit), countHeartbeats(sql, range)], {
            concurrency: 2
          }).pipe(Effect.orDie)
          return { heartbeats: rows.map(toHeartbeat), count }
        }
      )

      return Monitors.of({ create, list, get, update, remove, heartbeats })
    })
  ).pipe(Layer.provide(MonitorRepository.layer))
}
