import { Clock, Context, Effect, Layer, Predicate, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { LatencyDay, PerformanceStats } from "../../schemas/observe/Performance.ts"
import { decodeRows, Int8 } from "../platform/Rows.ts"
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
/** Advisory lock (class, hashtext(org)): writers of closed days hold it shared, folding exclusively. */
const LOCK_CLASS = 60_606

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

/** A stored sketch, checked by one pass over its counts (a daily row holds many buckets). */
const StoredSketch = Schema.declare((input): input is Sketch.LatencySketch =>
  Predicate.isObject(input) && Object.values(input).every((count) => typeof count === "number")
)

/** A rollup row as statistics read it. */
const RollupRow = Schema.Struct({
  day: Schema.String,
  spans: Int8,
  errors: Int8,
  duration: Schema.Number,
  sketch: Schema.fromJsonString(StoredSketch)
})

const CompactedDay = Schema.Struct({ day: Schema.Date })

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

      const upsertRollups = (
        sql: SqlClient.SqlClient,
        orgId: string,
        spans: ReadonlyArray<SpanInput>,
        grain: Grain
      ) => {
        const groups = rollupGroups(spans, grain)
        const table = sql(`span_rollups_${grain}`)
        // Daily rows exist only for folded days; other days stay hourly until folded.
        const onlyFolded = grain === "hourly" ? sql.literal("") : sql`
          WHERE EXISTS (SELECT 1 FROM span_days_compacted c WHERE c.org_id = ${orgId} AND c.day = b::timestamptz)`
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
          ${onlyFolded}
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
          const now = yield* Clock.currentTimeMillis
          const closed = spans.filter((span) =>
            floorTo(span.timestamp.getTime(), DAY_MS) + DAY_MS <= now - WRITER_MARGIN_MS
          )
          if (closed.length > 0) {
            yield* sql`SELECT pg_advisory_xact_lock_shared(${LOCK_CLASS}, hashtext(${orgId}))`
          }
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
          if (closed.length > 0) yield* upsertRollups(sql, orgId, closed, "daily")
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
          sql`
            SELECT day FROM span_days_compacted WHERE org_id = ${orgId}
              AND day >= ${iso(plan.daysFrom)}::timestamptz AND day < ${iso(foldedTo)}::timestamptz`.pipe(
            decodeRows(CompactedDay)
          ),
          (rows) => new Set(rows.map((row) => row.day.getTime()))
        )
        const done = yield* folded
        const missing = closed.filter((day) => !done.has(day))
        if (missing.length === 0) return foldedTo
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT pg_advisory_xact_lock(${LOCK_CLASS}, hashtext(${orgId}))`
          // Another request may have folded some of them meanwhile.
          const foldedMeanwhile = yield* folded
          const days = missing.filter((day) => !foldedMeanwhile.has(day)).map(iso).join(",")
          if (days === "") return
          yield* sql`
            INSERT INTO span_rollups_daily
              (org_id, bucket, name, release, environment, span_count, error_count, duration_sum, sketch)
            SELECT org_id, date_trunc('day', bucket, 'UTC'), name, release, environment,
              sum(span_count), sum(error_count), sum(duration_sum), latency_sketch_sum(sketch)
            FROM span_rollups_hourly
            JOIN (SELECT unnest(string_to_array(${days}, ','))::timestamptz AS day) AS todo
              ON bucket >= todo.day AND bucket < todo.day + interval '24 hours'
            WHERE org_id = ${orgId}
            GROUP BY org_id, 2, name, release, environment`
          yield* sql`
            INSERT INTO span_days_compacted (org_id, day)
            SELECT ${orgId}, day::timestamptz FROM unnest(string_to_array(${days}, ',')) AS day`
        }))
        return foldedTo
      })

      const stats = Effect.fn("Performance.stats")(function*(orgId: string, filter: StatsFilter) {
        const sql = ownSql
        const plan = windowPlan(filter.from, filter.to)
        const foldedTo = iso(yield* foldClosedDays(orgId, plan))
        const daysFrom = iso(plan.daysFrom)
        const matches = sql`
          org_id = ${orgId}
          ${filter.name === undefined ? sql.literal("") : sql`AND name = ${filter.name}`}
          ${filter.release === undefined ? sql.literal("") : sql`AND release = ${filter.release}`}
          ${filter.environment === undefined ? sql.literal("") : sql`AND environment = ${filter.environment}`}`
        const [start, end] = [plan.start, plan.end].map(iso)
        const rollups = sql`
          SELECT bucket, span_count, error_count, duration_sum, sketch FROM span_rollups_daily
          WHERE ${matches} AND bucket >= ${daysFrom}::timestamptz AND bucket < ${foldedTo}::timestamptz
          UNION ALL
          SELECT bucket, span_count, error_count, duration_sum, sketch FROM span_rollups_hourly
          WHERE ${matches} AND bucket >= ${start}::timestamptz AND bucket <= ${end}::timestamptz
            AND NOT (bucket >= ${daysFrom}::timestamptz AND bucket < ${foldedTo}::timestamptz)`
        const day = sql.literal(`to_char(bucket AT TIME ZONE 'UTC', 'YYYY-MM-DD')`)
        // Rows travel whole and their sketches merge here: cheaper than expanding every
        // bucket in SQL (measured by bench/observe-performance.ts).
        const rows = yield* sql`
          SELECT ${day} AS day, span_count AS spans, error_count AS errors,
            duration_sum AS duration, sketch::text AS sketch
          FROM (${rollups}) AS r`.pipe(decodeRows(RollupRow))
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
