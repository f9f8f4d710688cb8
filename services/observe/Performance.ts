import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { LatencyDay, PerformanceStats } from "../../schemas/observe/Performance.ts"
import * as Sketch from "./LatencySketch.ts"
import {
  foldedDays,
  foldIntoDaily,
  type Grain,
  insertSpans,
  lockClosedDays,
  lockClosedDaysShared,
  markDaysFolded,
  type RollupGroup,
  type SpanInput,
  upsertRollups,
  windowRollups
} from "./SpanRows.ts"

export type { SpanInput } from "./SpanRows.ts"

export interface StatsFilter {
  readonly from: Date
  readonly to: Date
  readonly release?: string | undefined
  readonly environment?: string | undefined
  readonly name?: string | undefined
}

const HOUR_MS = 3_600_000
const DAY_MS = 24 * HOUR_MS

const p95 = 0.95

const GRAIN_MS: Readonly<Record<Grain, number>> = { hourly: HOUR_MS, daily: DAY_MS }
const floorTo = (ms: number, step: number) => Math.floor(ms / step) * step

/** Groups spans by rollup key, sorted by key so concurrent writers lock rows in one order. */
const rollupGroups = (spans: ReadonlyArray<SpanInput>, grain: Grain): ReadonlyArray<RollupGroup> => {
  const groups = new Map<string, RollupGroup>()
  for (const span of spans) {
    const bucket = floorTo(span.timestamp.getTime(), GRAIN_MS[grain])
    const release = span.release ?? ""
    const environment = span.environment ?? ""
    const key = JSON.stringify([bucket, span.name, release, environment])
    let group = groups.get(key)
    if (group === undefined) {
      group = { bucket, name: span.name, release, environment, spans: 0, errors: 0, durationSum: 0, sketch: {} }
      groups.set(key, group)
    }
    const duration = Math.max(0, span.durationMs)
    group.spans += 1
    if (span.status === "error") group.errors += 1
    group.durationSum += duration
    Sketch.add(group.sketch, duration)
  }
  return [...groups.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, group]) => group)
}

/**
 * A day may be folded into daily rollups once it ended this long ago. Writers treat a day as
 * possibly folded already once it ended half as long ago, so clock skew between runners and
 * long transactions stay covered.
 */
const COMPACT_AFTER_MS = 2 * HOUR_MS
const WRITER_MARGIN_MS = HOUR_MS

/**
 * The whole UTC days of a window (`daysFrom` … `daysTo`, exclusive) and its edge hours
 * (`start` … `daysFrom`, `daysTo` … `end`). `from` is rounded down to its hour.
 */
const windowPlan = (from: Date, to: Date) => {
  const start = floorTo(from.getTime(), HOUR_MS)
  const end = to.getTime()
  let daysFrom = Math.ceil(start / DAY_MS) * DAY_MS
  let daysTo = floorTo(end + 1, DAY_MS)
  // No whole day inside: everything from the hourly table.
  if (daysTo <= daysFrom) daysFrom = daysTo = start
  return { start, end, daysFrom, daysTo }
}

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10)
const iso = (ms: number) => new Date(ms).toISOString()

/**
 * Spans, their hourly and daily rollups with latency sketches, and the statistics served
 * from them.
 *
 * Raw spans are kept for traces; statistics never read them. Ingest writes hourly rollups
 * only (small sketches, cheap upserts). A day that has closed is folded into daily rows the
 * first time statistics need it (`span_days_compacted` remembers which), so a window costs
 * one daily row per name × release × environment for each closed day, plus the hours of
 * open days and edges. A late span for a folded day updates its daily row too, under an
 * advisory lock that keeps it from racing the fold.
 */
export class Performance extends Context.Service<Performance, {
  /**
   * Writes spans and folds them into the rollups, in the caller's transaction (the ingest
   * group commit): two statements whatever the number of spans (four when some belong to
   * days that have closed).
   */
  recordSpans(
    orgId: string,
    spans: ReadonlyArray<SpanInput>
  ): Effect.Effect<void, SqlError, SqlClient.SqlClient>
  stats(orgId: string, filter: StatsFilter): Effect.Effect<PerformanceStats>
}>()("canopy/observe/Performance") {
  static readonly layer = Layer.effect(
    Performance,
    Effect.gen(function*() {
      const ownSql = yield* SqlClient.SqlClient

      const recordSpans = (orgId: string, spans: ReadonlyArray<SpanInput>) =>
        Effect.gen(function*() {
          if (spans.length === 0) return
          // The caller's client, so the statements join its transaction.
          const sql = yield* SqlClient.SqlClient
          const now = yield* Clock.currentTimeMillis
          const closed = spans.filter((span) =>
            floorTo(span.timestamp.getTime(), DAY_MS) + DAY_MS <= now - WRITER_MARGIN_MS
          )
          if (closed.length > 0) yield* lockClosedDaysShared(sql, orgId)
          yield* insertSpans(sql, orgId, spans)
          yield* upsertRollups(sql, orgId, rollupGroups(spans, "hourly"), "hourly")
          if (closed.length > 0) yield* upsertRollups(sql, orgId, rollupGroups(closed, "daily"), "daily")
        })

      /**
       * Folds the window's closed days into daily rows (once per day). They are the window's
       * first whole days, so the result is where they end: `[plan.daysFrom, foldedTo)`.
       */
      const foldClosedDays = Effect.fn("Performance.foldClosedDays")(function*(
        orgId: string,
        plan: ReturnType<typeof windowPlan>
      ) {
        const sql = ownSql
        const now = yield* Clock.currentTimeMillis
        const closed: Array<number> = []
        for (let day = plan.daysFrom; day < plan.daysTo && day + DAY_MS <= now - COMPACT_AFTER_MS; day += DAY_MS) {
          closed.push(day)
        }
        const foldedTo = plan.daysFrom + closed.length * DAY_MS
        if (closed.length === 0) return foldedTo
        const folded = Effect.map(
          foldedDays(sql, orgId, plan.daysFrom, foldedTo),
          (rows) => new Set(rows.map((row) => row.day.getTime()))
        )
        const done = yield* folded
        const missing = closed.filter((day) => !done.has(day))
        if (missing.length === 0) return foldedTo
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* lockClosedDays(sql, orgId)
          // Another request may have folded some of them meanwhile.
          const foldedMeanwhile = yield* folded
          const days = missing.filter((day) => !foldedMeanwhile.has(day)).map(iso).join(",")
          if (days === "") return
          yield* foldIntoDaily(sql, orgId, days)
          yield* markDaysFolded(sql, orgId, days)
        }))
        return foldedTo
      })

      const stats = Effect.fn("Performance.stats")(function*(orgId: string, filter: StatsFilter) {
        const sql = ownSql
        const plan = windowPlan(filter.from, filter.to)
        const foldedTo = iso(yield* foldClosedDays(orgId, plan))
        const daysFrom = iso(plan.daysFrom)
        const [start, end] = [plan.start, plan.end].map(iso)
        const rows = yield* windowRollups(
          sql,
          { orgId, name: filter.name, release: filter.release, environment: filter.environment },
          { start, end, daysFrom, foldedTo }
        )
        const days = new Map<string, { spans: number; duration: number; sketch: Sketch.LatencySketch }>()
        const overall = Sketch.empty()
        let totalSpans = 0
        let errors = 0
        let duration = 0
        for (const row of rows) {
          const { sketch, spans } = row
          let entry = days.get(row.day)
          if (entry === undefined) days.set(row.day, entry = { spans: 0, duration: 0, sketch: Sketch.empty() })
          entry.spans += spans
          entry.duration += row.duration
          Sketch.mergeInto(entry.sketch, sketch)
          Sketch.mergeInto(overall, sketch)
          totalSpans += spans
          errors += row.errors
          duration += row.duration
        }
        const latencyHistory: Array<LatencyDay> = []
        for (let ms = floorTo(plan.start, DAY_MS); ms <= plan.end; ms += DAY_MS) {
          const date = dayOf(ms)
          const entry = days.get(date)
          latencyHistory.push({
            date,
            avg: entry === undefined || entry.spans === 0 ? 0 : entry.duration / entry.spans,
            p95: entry === undefined ? 0 : Sketch.quantile(entry.sketch, p95),
            count: entry?.spans ?? 0
          })
        }
        return {
          avgLatency: totalSpans === 0 ? 0 : duration / totalSpans,
          p95Latency: Sketch.quantile(overall, p95),
          totalSpans,
          errorRate: totalSpans === 0 ? 0 : errors / totalSpans,
          latencyHistory
        } satisfies PerformanceStats
      }, Effect.orDie)

      return { recordSpans, stats }
    })
  )
}
