import { Predicate, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { decodeRows, Int8 } from "../platform/Rows.ts"
import type * as Sketch from "./LatencySketch.ts"

/*
 * The `spans` table, its rollups (`span_rollups_hourly`, `span_rollups_daily`, with latency
 * sketches) and `span_days_compacted` (the days folded into daily rows): their rows and every
 * statement on them (the folding rules are Performance's).
 */

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

export type Grain = "hourly" | "daily"

/** One rollup row's worth of spans: the same hour (or day), name, release and environment. */
export interface RollupGroup {
  readonly bucket: number
  readonly name: string
  readonly release: string
  readonly environment: string
  spans: number
  errors: number
  durationSum: number
  readonly sketch: Sketch.LatencySketch
}

/** Advisory lock (class, hashtext(org)): writers of closed days hold it shared, folding exclusively. */
const LOCK_CLASS = 60_606

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

const iso = (ms: number) => new Date(ms).toISOString()

/** Writers of closed days hold this for their transaction (shared), so no fold races them. */
export const lockClosedDaysShared = (sql: SqlClient.SqlClient, orgId: string) =>
  sql`SELECT pg_advisory_xact_lock_shared(${LOCK_CLASS}, hashtext(${orgId}))`

/** The fold holds this for its transaction (exclusive). */
export const lockClosedDays = (sql: SqlClient.SqlClient, orgId: string) =>
  sql`SELECT pg_advisory_xact_lock(${LOCK_CLASS}, hashtext(${orgId}))`

/**
 * Inserts the spans in one statement. Unset optional text travels as '' (the driver cannot
 * type an array of nulls) and is stored as NULL.
 */
export const insertSpans = (sql: SqlClient.SqlClient, orgId: string, spans: ReadonlyArray<SpanInput>) =>
  sql`
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

/** Adds the groups to their rollup rows of `grain` (daily: only days already folded). */
export const upsertRollups = (
  sql: SqlClient.SqlClient,
  orgId: string,
  groups: ReadonlyArray<RollupGroup>,
  grain: Grain
) => {
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

/** The days in `[from, to)` (ms) already folded into daily rows. */
export const foldedDays = (sql: SqlClient.SqlClient, orgId: string, from: number, to: number) =>
  sql`
    SELECT day FROM span_days_compacted WHERE org_id = ${orgId}
      AND day >= ${iso(from)}::timestamptz AND day < ${iso(to)}::timestamptz`.pipe(decodeRows(CompactedDay))

/** Folds the hourly rows of `days` (ISO instants, comma-separated) into daily rows. */
export const foldIntoDaily = (sql: SqlClient.SqlClient, orgId: string, days: string) =>
  sql`
    INSERT INTO span_rollups_daily
      (org_id, bucket, name, release, environment, span_count, error_count, duration_sum, sketch)
    SELECT org_id, date_trunc('day', bucket, 'UTC'), name, release, environment,
      sum(span_count), sum(error_count), sum(duration_sum), latency_sketch_sum(sketch)
    FROM span_rollups_hourly
    JOIN (SELECT unnest(string_to_array(${days}, ','))::timestamptz AS day) AS todo
      ON bucket >= todo.day AND bucket < todo.day + interval '24 hours'
    WHERE org_id = ${orgId}
    GROUP BY org_id, 2, name, release, environment`

/** Marks `days` (as for `foldIntoDaily`) folded. */
export const markDaysFolded = (sql: SqlClient.SqlClient, orgId: string, days: string) =>
  sql`
    INSERT INTO span_days_compacted (org_id, day)
    SELECT ${orgId}, day::timestamptz FROM unnest(string_to_array(${days}, ',')) AS day`

export interface RollupFilter {
  readonly orgId: string
  readonly name?: string | undefined
  readonly release?: string | undefined
  readonly environment?: string | undefined
}

/**
 * The rollup rows of a window with their UTC day: daily rows for the folded days
 * `[daysFrom, foldedTo)`, hourly rows for the rest of `[start, end]` (ISO instants).
 */
export const windowRollups = (
  sql: SqlClient.SqlClient,
  filter: RollupFilter,
  window: { readonly start: string; readonly end: string; readonly daysFrom: string; readonly foldedTo: string }
) => {
  const { daysFrom, end, foldedTo, start } = window
  const matches = sql`
    org_id = ${filter.orgId}
    ${filter.name === undefined ? sql.literal("") : sql`AND name = ${filter.name}`}
    ${filter.release === undefined ? sql.literal("") : sql`AND release = ${filter.release}`}
    ${filter.environment === undefined ? sql.literal("") : sql`AND environment = ${filter.environment}`}`
  const rollups = sql`
    SELECT bucket, span_count, error_count, duration_sum, sketch FROM span_rollups_daily
    WHERE ${matches} AND bucket >= ${daysFrom}::timestamptz AND bucket < ${foldedTo}::timestamptz
    UNION ALL
    SELECT bucket, span_count, error_count, duration_sum, sketch FROM span_rollups_hourly
    WHERE ${matches} AND bucket >= ${start}::timestamptz AND bucket <= ${end}::timestamptz
      AND NOT (bucket >= ${daysFrom}::timestamptz AND bucket < ${foldedTo}::timestamptz)`
  const day = sql.literal(`to_char(bucket AT TIME ZONE 'UTC', 'YYYY-MM-DD')`)
  // Rows travel whole and their sketches merge in the caller: cheaper than expanding every
  // bucket in SQL (measured by bench/observe-performance.ts).
  return sql`
    SELECT ${day} AS day, span_count AS spans, error_count AS errors,
      duration_sum AS duration, sketch::text AS sketch
    FROM (${rollups}) AS r`.pipe(decodeRows(RollupRow))
}
