import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { LatencyDay, PerformanceStats } from "../../schemas/Performance.ts"
import * as Sketch from "./LatencySketch.ts"

/** A span as the ingest pipeline hands it over (spec "Span" plus its event's context). */
export interface SpanInput {
  readonly traceId: string
  readonly spanId: string
  readonly parentId?: string | undefined
  readonly name: string
  readonly durationMs: number
  readonly status: "ok" | "error"
  readonly timestamp: Date
  readonly release?: string | undefined
  readonly environment?: string | undefined
}

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

type Grain = "hourly" | "daily"
const GRAIN_MS: Readonly<Record<Grain, number>> = { hourly: HOUR_MS, daily: DAY_MS }
const floorTo = (ms: number, step: number) => Math.floor(ms / step) * step

/** One rollup row's worth of spans: the same hour (or day), name, release and environment. */
interface RollupGroup {
  readonly bucket: number
  readonly name: string
  readonly release: string
  readonly environment: string
  spans: number
  errors: number
  durationSum: number
  readonly sketch: Sketch.LatencySketch
}

/** Groups spans by rollup key, sorted by key so concurrent writers lock rows in one order. */
export const rollupGroups = (spans: ReadonlyArray<SpanInput>, grain: Grain): ReadonlyArray<RollupGroup> => {
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
 * Which rollups answer a window: whole UTC days from the daily table, the hours before the
 * first and after the last whole day from the hourly one. `from` is rounded down to its hour.
 */
export const windowPlan = (from: Date, to: Date) => {
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
 * Raw spans are kept for traces; statistics never read them: a window costs its whole days
 * (one daily row per name × release × environment) plus at most 46 edge hours, merged per
 * day inside Postgres.
 */
export class Performance extends Context.Service<Performance, {
  /**
   * Writes spans and folds them into the rollups, in the caller's transaction (the ingest
   * group commit): three statements whatever the number of spans.
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

      const upsertRollups = (
        sql: SqlClient.SqlClient,
        orgId: string,
        spans: ReadonlyArray<SpanInput>,
        grain: Grain
      ) => {
        const groups = rollupGroups(spans, grain)
        const table = sql(`span_rollups_${grain}`)
        return sql`
          INSERT INTO ${table} AS r
            (org_id, bucket, name, release, environment, span_count, error_count, duration_sum, sketch)
          SELECT ${orgId}, b::timestamptz, n, rel, env, c, ec, ds, sk::jsonb
          FROM unnest(
            ${groups.map((group) => iso(group.bucket))}::text[],
            ${groups.map((group) => group.name)}::text[],
            ${groups.map((group) => group.release)}::text[],
            ${groups.map((group) => group.environment)}::text[],
            ${groups.map((group) => group.spans)}::int8[],
            ${groups.map((group) => group.errors)}::int8[],
            ${groups.map((group) => group.durationSum)}::float8[],
            ${groups.map((group) => JSON.stringify(group.sketch))}::text[]
          ) AS v(b, n, rel, env, c, ec, ds, sk)
          ON CONFLICT (org_id, bucket, name, release, environment) DO UPDATE SET
            span_count = r.span_count + excluded.span_count,
            error_count = r.error_count + excluded.error_count,
            duration_sum = r.duration_sum + excluded.duration_sum,
            sketch = latency_sketch_merge(r.sketch, excluded.sketch)`
      }

      const recordSpans = (orgId: string, spans: ReadonlyArray<SpanInput>) =>
        Effect.gen(function*() {
          if (spans.length === 0) return
          // The caller's client, so the statements join its transaction. Unset optional text
          // travels as '' (the driver cannot type an array of nulls) and is stored as NULL.
          const sql = yield* SqlClient.SqlClient
          yield* sql`
            INSERT INTO spans
              (org_id, trace_id, span_id, parent_id, name, duration_ms, is_error, started_at, release, environment)
            SELECT ${orgId}, t, s, nullif(p, ''), n, d, e, a::timestamptz, nullif(r, ''), nullif(v, '')
            FROM unnest(
              ${spans.map((span) => span.traceId)}::text[],
              ${spans.map((span) => span.spanId)}::text[],
              ${spans.map((span) => span.parentId ?? "")}::text[],
              ${spans.map((span) => span.name)}::text[],
              ${spans.map((span) => Math.max(0, span.durationMs))}::float8[],
              ${spans.map((span) => span.status === "error")}::bool[],
              ${spans.map((span) => span.timestamp.toISOString())}::text[],
              ${spans.map((span) => span.release ?? "")}::text[],
              ${spans.map((span) => span.environment ?? "")}::text[]
            ) AS v(t, s, p, n, d, e, a, r, v)`
          yield* upsertRollups(sql, orgId, spans, "hourly")
          yield* upsertRollups(sql, orgId, spans, "daily")
        })

      const stats = Effect.fn("Performance.stats")(function*(orgId: string, filter: StatsFilter) {
        const sql = ownSql
        const plan = windowPlan(filter.from, filter.to)
        const matches = sql`
          org_id = ${orgId}
          ${filter.name === undefined ? sql.literal("") : sql`AND name = ${filter.name}`}
          ${filter.release === undefined ? sql.literal("") : sql`AND release = ${filter.release}`}
          ${filter.environment === undefined ? sql.literal("") : sql`AND environment = ${filter.environment}`}`
        const [start, end, daysFrom, daysTo] = [plan.start, plan.end, plan.daysFrom, plan.daysTo].map(iso)
        const rollups = sql`
          SELECT bucket, span_count, error_count, duration_sum, sketch FROM span_rollups_daily
          WHERE ${matches} AND bucket >= ${daysFrom}::timestamptz AND bucket < ${daysTo}::timestamptz
          UNION ALL
          SELECT bucket, span_count, error_count, duration_sum, sketch FROM span_rollups_hourly
          WHERE ${matches} AND (
            (bucket >= ${start}::timestamptz AND bucket < ${daysFrom}::timestamptz)
            OR (bucket >= ${daysTo}::timestamptz AND bucket <= ${end}::timestamptz))`
        const day = sql.literal(`to_char(bucket AT TIME ZONE 'UTC', 'YYYY-MM-DD')`)
        // Rows travel whole and their sketches merge here: cheaper than expanding every
        // bucket in SQL (measured by bench/performance.ts).
        const rows = yield* sql<{ day: string; spans: string; errors: string; duration: number; sketch: string }>`
          SELECT ${day} AS day, span_count::text AS spans, error_count::text AS errors,
            duration_sum AS duration, sketch::text AS sketch
          FROM (${rollups}) AS r`
        const days = new Map<string, { spans: number; duration: number; sketch: Sketch.LatencySketch }>()
        const overall = Sketch.empty()
        let totalSpans = 0
        let errors = 0
        let duration = 0
        for (const row of rows) {
          const sketch = JSON.parse(row.sketch) as Sketch.LatencySketch
          const spans = Number(row.spans)
          let entry = days.get(row.day)
          if (entry === undefined) days.set(row.day, entry = { spans: 0, duration: 0, sketch: Sketch.empty() })
          entry.spans += spans
          entry.duration += row.duration
          Sketch.mergeInto(entry.sketch, sketch)
          Sketch.mergeInto(overall, sketch)
          totalSpans += spans
          errors += Number(row.errors)
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
