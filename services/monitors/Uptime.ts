import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type * as Statement from "effect/sql/Statement"
import { deleteHeartbeatsBefore } from "./HeartbeatRows.ts"
import { MonitorRepository } from "./MonitorRepository.ts"
import { type Bucket, dailyRollups, rollupTotals, upsertUptimeBuckets, upsertUptimeRows } from "./UptimeRows.ts"

/**
 * Uptime from hourly rollups (GUIDE §6): the share of a window a monitor was not `down`,
 * weighted by time, ignoring paused and pending time; 100 when there is no data.
 *
 * Accounting protocol (the invariant the figures rely on):
 * - `monitor_uptime_hourly` holds every interval that has been *closed*, split at hour
 *   boundaries: `up_ms` for time spent `up` or `degraded`, `down_ms` for time spent `down`;
 *   paused and pending time is in neither.
 * - `monitors.status_since` is where the *open* interval starts: everything before it has
 *   been accounted through {@link accountInterval}, nothing after it has. Whoever changes a
 *   monitor's status (the check recorder, pause/resume in `Monitors`) does, in one
 *   transaction holding the monitor row: `accountInterval({from: status_since, to: now,
 *   status: <the old status>})`, then sets `status` and `status_since = now`. A recorder may
 *   also close the interval at every check (same status, `status_since` moves on) so the
 *   rollups fill as heartbeats arrive; the figures are the same either way.
 * - `uptime` adds the open interval `[status_since, now)` in the current status.
 *
 * Rollups are kept indefinitely; raw heartbeats are pruned by {@link pruneHeartbeats}.
 */

export type UptimeWindow = "24h" | "7d" | "30d"

const HOUR_MS = 3_600_000
const DAY_MS = 24 * HOUR_MS

export const UPTIME_WINDOW_MS: Readonly<Record<UptimeWindow, number>> = {
  "24h": DAY_MS,
  "7d": 7 * DAY_MS,
  "30d": 30 * DAY_MS
}

/** Any monitor status; only `up`/`degraded` (not down) and `down` count towards uptime. */
export type AccountedStatus = "up" | "degraded" | "down" | "paused" | "pending"

export interface AccountIntervalInput {
  readonly monitorId: string
  /** Start of the interval (inclusive). */
  readonly from: Date
  /** End of the interval (exclusive). An empty or negative interval adds no time. */
  readonly to: Date
  /** The status the monitor was in during `[from, to)`. */
  readonly status: AccountedStatus
  /** Checks to count (default 0), in the hour of `checkedAt`. */
  readonly checks?: number | undefined
  /** Of which failed (heartbeat `down`), default 0. */
  readonly failed?: number | undefined
  /** Sum of the response times of those checks in ms (default 0); average = sum / checks. */
  readonly responseTimeMs?: number | undefined
  /** Hour the counters belong to; default `to`. */
  readonly checkedAt?: Date | undefined
}

/** Longest interval accounted at once; anything older is dropped (a year of hourly rows). */
const MAX_INTERVAL_MS = 400 * DAY_MS

const floorHour = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS

/** The rows `accountInterval` adds, one per touched hour (pure, for tests and reuse). */
export const intervalBuckets = (input: AccountIntervalInput): ReadonlyArray<Bucket> => {
  const buckets = new Map<number, Bucket>()
  const bucket = (hour: number) => {
    let existing = buckets.get(hour)
    if (existing === undefined) {
      existing = { hour, up_ms: 0, down_ms: 0, checks: 0, failed_checks: 0, response_time_sum: 0 }
      buckets.set(hour, existing)
    }
    return existing
  }
  const end = input.to.getTime()
  const start = Math.max(input.from.getTime(), end - MAX_INTERVAL_MS)
  const column = input.status === "up" || input.status === "degraded"
    ? "up_ms"
    : input.status === "down"
    ? "down_ms"
    : undefined
  if (column !== undefined && end > start) {
    for (let hour = floorHour(start); hour < end; hour += HOUR_MS) {
      const ms = Math.min(end, hour + HOUR_MS) - Math.max(start, hour)
      if (ms > 0) bucket(hour)[column] += ms
    }
  }
  const checks = input.checks ?? 0
  const failed = input.failed ?? 0
  const responseTime = input.responseTimeMs ?? 0
  if (checks > 0 || failed > 0 || responseTime > 0) {
    const counters = bucket(floorHour((input.checkedAt ?? input.to).getTime()))
    counters.checks += checks
    counters.failed_checks += failed
    counters.response_time_sum += Math.round(responseTime)
  }
  return [...buckets.values()].sort((a, b) => a.hour - b.hour)
}

/**
 * `accountInterval`'s upsert as a statement to embed in a larger one (as a CTE), applied
 * only when `when` holds; `undefined` when the interval adds nothing.
 */
export const accountIntervalStatement = (
  sql: SqlClient.SqlClient,
  input: AccountIntervalInput,
  when?: Statement.Fragment
) => {
  const buckets = intervalBuckets(input)
  if (buckets.length === 0) return undefined
  return upsertUptimeBuckets(sql, input.monitorId, buckets, when)
}

/**
 * `accountIntervalStatement` for many monitors (at most one input each) in one upsert, each
 * monitor's rows applied only if its id is in `monitorIds` (a subquery of the embedding
 * statement); `undefined` when the intervals add nothing.
 */
export const accountIntervalsStatement = (
  sql: SqlClient.SqlClient,
  inputs: ReadonlyArray<AccountIntervalInput>,
  monitorIds: Statement.Fragment
) => {
  const rows = inputs.flatMap((input) =>
    intervalBuckets(input).map((bucket) => ({
      ...bucket,
      monitor_id: input.monitorId,
      hour: new Date(bucket.hour).toISOString()
    }))
  )
  return rows.length === 0 ? undefined : upsertUptimeRows(sql, rows, monitorIds)
}

/**
 * Adds `[from, to)` in `status` (and any check counters) to `monitor_uptime_hourly`, split
 * at hour boundaries, in one upsert. Run it inside the transaction that moves
 * `monitors.status_since` past `to` (see the accounting protocol above).
 */
export const accountInterval = (
  sql: SqlClient.SqlClient,
  input: AccountIntervalInput
): Effect.Effect<void, SqlError> =>
  Effect.suspend(() => {
    const statement = accountIntervalStatement(sql, input)
    return statement === undefined ? Effect.void : Effect.asVoid(statement)
  })

export interface UptimeTotals {
  /** Milliseconds of the window not down (up or degraded). */
  readonly upMs: number
  /** Milliseconds of the window down. */
  readonly downMs: number
}

/** Uptime percentage of totals: 100 with no data. */
export const uptimePercent = (totals: UptimeTotals): number => {
  const total = totals.upMs + totals.downMs
  return total <= 0 ? 100 : (totals.upMs / total) * 100
}

/**
 * Up and down milliseconds of each monitor in each window ending at `now`, in one rollup query for
 * all monitors: rollup hours inside the window count fully, the hour the window starts in
 * counts pro rata (its time is assumed spread evenly over the hour), and the open interval
 * from `status_since` to `now` counts in the current status. Unknown ids are absent.
 */
export const uptimeTotals = <W extends UptimeWindow>(
  sql: SqlClient.SqlClient,
  monitors: MonitorRepository["Service"],
  monitorIds: ReadonlyArray<string>,
  windows: ReadonlyArray<W>,
  now: Date
): Effect.Effect<ReadonlyMap<string, Record<W, UptimeTotals>>, SqlError> =>
  Effect.gen(function*() {
    const result = new Map<string, Record<W, UptimeTotals>>()
    const ids = [...new Set(monitorIds)]
    if (ids.length === 0 || windows.length === 0) return result
    const nowMs = now.getTime()
    const starts = windows.map((window) => nowMs - UPTIME_WINDOW_MS[window])
    // The monitors' open intervals come from their owner; the rollups are summed here.
    const spans = yield* monitors.statusSpans(ids)
    if (spans.length === 0) return result
    const rows = yield* rollupTotals(sql, spans.map((span) => span.id), starts, now)
    const byId = new Map(rows.map((row) => [row.id, row]))
    for (const span of spans) {
      const row: Readonly<Record<string, number | string>> = byId.get(span.id) ?? {}
      const since = span.statusSince.getTime()
      const figures = {} as Record<W, UptimeTotals>
      windows.forEach((window, i) => {
        let upMs = Number(row[`up_${i}`] ?? 0)
        let downMs = Number(row[`down_${i}`] ?? 0)
        const open = Math.max(0, nowMs - Math.max(since, starts[i]))
        if (span.status === "up" || span.status === "degraded") upMs += open
        else if (span.status === "down") downMs += open
        figures[window] = { upMs, downMs }
      })
      result.set(span.id, figures)
    }
    return result
  })

/** One UTC day of a monitor's rollups: `date` is `YYYY-MM-DD`. */
export interface DailyUptime extends UptimeTotals {
  readonly date: string
}

/** Up and down milliseconds per monitor per UTC day over the last `days` days; days without data are absent. */
export const dailyUptimeTotals = (
  sql: SqlClient.SqlClient,
  monitorIds: ReadonlyArray<string>,
  days: number,
  now: Date
): Effect.Effect<ReadonlyMap<string, ReadonlyArray<DailyUptime>>, SqlError> =>
  Effect.gen(function*() {
    const result = new Map<string, Array<DailyUptime>>()
    const ids = [...new Set(monitorIds)]
    if (ids.length === 0) return result
    const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - (days - 1) * DAY_MS)
    const rows = yield* dailyRollups(sql, ids, from)
    for (const row of rows) {
      const list = result.get(row.monitorId) ?? []
      list.push({ date: row.date, upMs: row.upMs, downMs: row.downMs })
      result.set(row.monitorId, list)
    }
    return result
  })

/** `daily`'s closed days plus each monitor's open interval in its current status, split at UTC days. */
export const withOpenIntervals = (
  closed: ReadonlyMap<string, ReadonlyArray<DailyUptime>>,
  spans: ReadonlyArray<{ readonly id: string; readonly status: string; readonly statusSince: Date }>,
  days: number,
  now: Date
): ReadonlyMap<string, ReadonlyArray<DailyUptime>> => {
  const result = new Map<string, ReadonlyArray<DailyUptime>>(closed)
  const nowMs = now.getTime()
  const firstDay = Math.floor(nowMs / DAY_MS) * DAY_MS - (days - 1) * DAY_MS
  for (const span of spans) {
    const column = span.status === "up" || span.status === "degraded"
      ? "upMs"
      : span.status === "down"
      ? "downMs"
      : undefined
    if (column === undefined) continue
    const byDate = new Map((result.get(span.id) ?? []).map((day) => [day.date, { ...day }]))
    for (let from = Math.max(span.statusSince.getTime(), firstDay); from < nowMs;) {
      const dayEnd = (Math.floor(from / DAY_MS) + 1) * DAY_MS
      const to = Math.min(dayEnd, nowMs)
      const date = new Date(from).toISOString().slice(0, 10)
      const day = byDate.get(date) ?? { date, upMs: 0, downMs: 0 }
      day[column] += to - from
      byDate.set(date, day)
      from = to
    }
    result.set(span.id, [...byDate.values()].sort((a, b) => a.date.localeCompare(b.date)))
  }
  return result
}

/** Deletes raw heartbeats older than the cutoff, monitor by monitor (index-friendly, bounded transactions). */
export const pruneHeartbeatsBefore = (
  sql: SqlClient.SqlClient,
  monitors: MonitorRepository["Service"],
  cutoff: Date
): Effect.Effect<number, SqlError> =>
  Effect.gen(function*() {
    let deleted = 0
    let after = ""
    while (true) {
      const page = yield* monitors.idPage(after, 500)
      if (page.length === 0) return deleted
      after = page[page.length - 1]
      deleted += yield* deleteHeartbeatsBefore(sql, page, cutoff)
    }
  })

/** Uptime figures and heartbeat retention. */
export class Uptime extends Context.Service<Uptime, {
  /**
   * Uptime percentage (0–100, unrounded; 100 with no data) of each monitor per window
   * ending at `now` (default: the Clock's time). One query for all ids; unknown ids absent.
   */
  uptime<W extends UptimeWindow>(
    monitorIds: ReadonlyArray<string>,
    windows: ReadonlyArray<W>,
    options?: { readonly now?: Date | undefined }
  ): Effect.Effect<ReadonlyMap<string, Record<W, number>>>
  /** Like `uptime` but the raw up/down milliseconds (e.g. to tell "no data" apart). */
  totals<W extends UptimeWindow>(
    monitorIds: ReadonlyArray<string>,
    windows: ReadonlyArray<W>,
    options?: { readonly now?: Date | undefined }
  ): Effect.Effect<ReadonlyMap<string, Record<W, UptimeTotals>>>
  /** Per monitor, the up/down time of each of the last `days` UTC days with data (status page bars). */
  daily(monitorIds: ReadonlyArray<string>, days: number): Effect.Effect<ReadonlyMap<string, ReadonlyArray<DailyUptime>>>
  /**
   * Retention: deletes raw heartbeats checked more than `olderThanDays` (default 90) days
   * ago; hourly rollups are kept, so uptime figures do not change. Returns the number
   * deleted. Meant to run daily on one runner (a cluster cron).
   */
  pruneHeartbeats(olderThanDays?: number): Effect.Effect<number>
}>()("canopy/monitors/Uptime") {
  static readonly layer = Layer.effect(
    Uptime,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const monitors = yield* MonitorRepository

      const currentNow = (options?: { readonly now?: Date | undefined }) =>
        options?.now !== undefined
          ? Effect.succeed(options.now)
          : Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

      const totals = <W extends UptimeWindow>(
        monitorIds: ReadonlyArray<string>,
        windows: ReadonlyArray<W>,
        options?: { readonly now?: Date | undefined }
      ) =>
        currentNow(options).pipe(
          Effect.flatMap((now) => uptimeTotals(sql, monitors, monitorIds, windows, now)),
          Effect.orDie,
          Effect.withSpan("Uptime.totals")
        )

      const uptime = <W extends UptimeWindow>(
        monitorIds: ReadonlyArray<string>,
        windows: ReadonlyArray<W>,
        options?: { readonly now?: Date | undefined }
      ) =>
        Effect.map(totals(monitorIds, windows, options), (byMonitor) => {
          const result = new Map<string, Record<W, number>>()
          for (const [id, figures] of byMonitor) {
            const percents = {} as Record<W, number>
            for (const window of windows) percents[window] = uptimePercent(figures[window])
            result.set(id, percents)
          }
          return result as ReadonlyMap<string, Record<W, number>>
        })

      const pruneHeartbeats = Effect.fn("Uptime.pruneHeartbeats")(function*(olderThanDays: number = 90) {
        const now = yield* Clock.currentTimeMillis
        return yield* pruneHeartbeatsBefore(sql, monitors, new Date(now - olderThanDays * DAY_MS)).pipe(Effect.orDie)
      })

      // The open interval [status_since, now) counts too, as in `totals`: an outage in progress
      // shows on today's bar at once, not only after the next check closes the interval.
      const daily = (monitorIds: ReadonlyArray<string>, days: number) =>
        currentNow().pipe(
          Effect.flatMap((now) =>
            Effect.map(
              Effect.all([dailyUptimeTotals(sql, monitorIds, days, now), monitors.statusSpans(monitorIds)]),
              ([closed, spans]) => withOpenIntervals(closed, spans, days, now)
            )
          ),
          Effect.orDie,
          Effect.withSpan("Uptime.daily")
        )

      return Uptime.of({ uptime, totals, daily, pruneHeartbeats })
    })
  ).pipe(Layer.provide(MonitorRepository.layer))
}
