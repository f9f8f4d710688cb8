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

/** One rollup row's worth of spans: the same hour, name, release and environment. */
interface RollupGroup {
  readonly hour: number
  readonly name: string
  readonly release: string
  readonly environment: string
  spans: number
  errors: number
  durationSum: number
  readonly sketch: Sketch.LatencySketch
}

/** Groups spans by rollup key, sorted by key so concurrent writers lock rows in one order. */
export const rollupGroups = (spans: ReadonlyArray<SpanInput>): ReadonlyArray<RollupGroup> => {
  const groups = new Map<string, RollupGroup>()
  for (const span of spans) {
    const hour = Math.floor(span.timestamp.getTime() / HOUR_MS) * HOUR_MS
    const release = span.release ?? ""
    const environment = span.environment ?? ""
    const key = JSON.stringify([hour, span.name, release, environment])
    let group = groups.get(key)
    if (group === undefined) {
      group = { hour, name: span.name, release, environment, spans: 0, errors: 0, durationSum: 0, sketch: {} }
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

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10)

/**
 * Spans, their hourly rollups with latency sketches, and the statistics served from them.
 *
 * Raw spans are kept for traces; statistics never read them: a window of any length costs
 * one pass over its hourly rollup rows (merged per day inside Postgres).
 */
export class Performance extends Context.Service<Performance, {
  /**
   * Writes spans and folds them into the rollups, in the caller's transaction (the ingest
   * group commit): two statements whatever the number of spans.
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
          const groups = rollupGroups(spans)
          yield* sql`
            INSERT INTO span_rollups_hourly AS r
              (org_id, hour, name, release, environment, span_count, error_count, duration_sum, sketch)
            SELECT ${orgId}, h::timestamptz, n, rel, env, c, ec, ds, sk::jsonb
            FROM unnest(
              ${groups.map((group) => new Date(group.hour).toISOString())}::text[],
              ${groups.map((group) => group.name)}::text[],
              ${groups.map((group) => group.release)}::text[],
              ${groups.map((group) => group.environment)}::text[],
              ${groups.map((group) => group.spans)}::int8[],
              ${groups.map((group) => group.errors)}::int8[],
              ${groups.map((group) => group.durationSum)}::float8[],
              ${groups.map((group) => JSON.stringify(group.sketch))}::text[]
            ) AS v(h, n, rel, env, c, ec, ds, sk)
            ON CONFLICT (org_id, hour, name, release, environment) DO UPDATE SET
              span_count = r.span_count + excluded.span_count,
              error_count = r.error_count + excluded.error_count,
              duration_sum = r.duration_sum + excluded.duration_sum,
              sketch = latency_sketch_merge(r.sketch, excluded.sketch)`
        })

      const stats = Effect.fn("Performance.stats")(function*(orgId: string, filter: StatsFilter) {
        const sql = ownSql
        const from = new Date(Math.floor(filter.from.getTime() / HOUR_MS) * HOUR_MS)
        const where = sql`
          org_id = ${orgId} AND hour >= ${from.toISOString()}::timestamptz AND hour <= ${filter.to.toISOString()}::timestamptz
          ${filter.name === undefined ? sql.literal("") : sql`AND name = ${filter.name}`}
          ${filter.release === undefined ? sql.literal("") : sql`AND release = ${filter.release}`}
          ${filter.environment === undefined ? sql.literal("") : sql`AND environment = ${filter.environment}`}`
        const day = sql.literal(`to_char(hour AT TIME ZONE 'UTC', 'YYYY-MM-DD')`)
        const totals = yield* sql<{ day: string; spans: string; errors: string; duration: number }>`
          SELECT ${day} AS day, sum(span_count)::text AS spans, sum(error_count)::text AS errors,
            sum(duration_sum)::float8 AS duration
          FROM span_rollups_hourly WHERE ${where} GROUP BY 1`
        const buckets = yield* sql<{ day: string; key: string; n: string }>`
          SELECT ${day} AS day, b.key, sum(b.value::bigint)::text AS n
          FROM span_rollups_hourly CROSS JOIN LATERAL jsonb_each_text(sketch) AS b
          WHERE ${where} GROUP BY 1, 2`
        const sketches = new Map<string, Sketch.LatencySketch>()
        const overall = Sketch.empty()
        for (const row of buckets) {
          let sketch = sketches.get(row.day)
          if (sketch === undefined) sketches.set(row.day, sketch = Sketch.empty())
          sketch[row.key] = Number(row.n)
          overall[row.key] = (overall[row.key] ?? 0) + Number(row.n)
        }
        const byDay = new Map(totals.map((row) => [row.day, row]))
        const latencyHistory: Array<LatencyDay> = []
        for (let ms = Date.parse(dayOf(from.getTime())); ms <= filter.to.getTime(); ms += DAY_MS) {
          const date = dayOf(ms)
          const row = byDay.get(date)
          const spans = row === undefined ? 0 : Number(row.spans)
          latencyHistory.push({
            date,
            avg: spans === 0 ? 0 : row!.duration / spans,
            p95: Sketch.quantile(sketches.get(date) ?? {}, p95),
            count: spans
          })
        }
        let totalSpans = 0
        let errors = 0
        let duration = 0
        for (const row of totals) {
          totalSpans += Number(row.spans)
          errors += Number(row.errors)
          duration += row.duration
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
