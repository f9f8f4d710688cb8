import { Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type * as Statement from "effect/sql/Statement"
import { decodeRows } from "../platform/Rows.ts"

/*
 * The `monitor_uptime_hourly` rollups: their rows and every statement on them (the
 * accounting protocol is `Uptime.ts`'s).
 */

/** One hour's additions to a monitor's rollup row. */
export interface Bucket {
  hour: number
  up_ms: number
  down_ms: number
  checks: number
  failed_checks: number
  response_time_sum: number
}

/**
 * Adds the buckets to the monitor's rollup rows, as a statement to embed in a larger one (as
 * a CTE), applied only when `when` holds.
 */
export const upsertUptimeBuckets = (
  sql: SqlClient.SqlClient,
  monitorId: string,
  buckets: ReadonlyArray<Bucket>,
  when: Statement.Fragment = sql.literal("true")
) => {
  const rows = JSON.stringify(buckets.map((bucket) => ({ ...bucket, hour: new Date(bucket.hour).toISOString() })))
  return sql`
    INSERT INTO monitor_uptime_hourly AS t
      (monitor_id, hour, up_ms, down_ms, checks, failed_checks, response_time_sum)
    SELECT ${monitorId}, r.hour, r.up_ms, r.down_ms, r.checks, r.failed_checks, r.response_time_sum
    FROM jsonb_to_recordset(${rows}::jsonb)
      AS r(hour timestamptz, up_ms bigint, down_ms bigint, checks integer, failed_checks integer,
           response_time_sum bigint)
    WHERE ${when}
    ON CONFLICT (monitor_id, hour) DO UPDATE SET
      up_ms = t.up_ms + EXCLUDED.up_ms,
      down_ms = t.down_ms + EXCLUDED.down_ms,
      checks = t.checks + EXCLUDED.checks,
      failed_checks = t.failed_checks + EXCLUDED.failed_checks,
      response_time_sum = t.response_time_sum + EXCLUDED.response_time_sum`
}

/**
 * `upsertUptimeBuckets` for many monitors in one upsert (`rows` carry their `monitor_id` and
 * ISO `hour`), each monitor's rows applied only if its id is in `monitorIds` (a subquery of
 * the embedding statement).
 */
export const upsertUptimeRows = (
  sql: SqlClient.SqlClient,
  rows: ReadonlyArray<Omit<Bucket, "hour"> & { readonly monitor_id: string; readonly hour: string }>,
  monitorIds: Statement.Fragment
) =>
  sql`
    INSERT INTO monitor_uptime_hourly AS t
      (monitor_id, hour, up_ms, down_ms, checks, failed_checks, response_time_sum)
    SELECT r.monitor_id, r.hour, r.up_ms, r.down_ms, r.checks, r.failed_checks, r.response_time_sum
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
      AS r(monitor_id text, hour timestamptz, up_ms bigint, down_ms bigint, checks integer, failed_checks integer,
           response_time_sum bigint)
    WHERE r.monitor_id IN ${monitorIds}
    ON CONFLICT (monitor_id, hour) DO UPDATE SET
      up_ms = t.up_ms + EXCLUDED.up_ms,
      down_ms = t.down_ms + EXCLUDED.down_ms,
      checks = t.checks + EXCLUDED.checks,
      failed_checks = t.failed_checks + EXCLUDED.failed_checks,
      response_time_sum = t.response_time_sum + EXCLUDED.response_time_sum`

/** A row of `rollupTotals`: the monitor, and `up_<i>`/`down_<i>` (float8 ms) for each window `i`. */
const totalsRow = (windows: number) =>
  Schema.Struct({
    id: Schema.String,
    ...Object.fromEntries(
      Array.from({ length: windows }, (_, i) => i).flatMap((i) => [
        [`up_${i}`, Schema.Number] as const,
        [`down_${i}`, Schema.Number] as const
      ])
    )
  })

/**
 * Up and down milliseconds of the rollups of each monitor in each window from `starts[i]`
 * (ms) to `now`, in one query: hours inside a window count fully, the hour it starts in
 * counts pro rata (its time is assumed spread evenly over the hour).
 */
export const rollupTotals = (
  sql: SqlClient.SqlClient,
  monitorIds: ReadonlyArray<string>,
  starts: ReadonlyArray<number>,
  now: Date
) => {
  const earliest = new Date(Math.min(...starts)).toISOString()
  const sums = starts.flatMap((start, i) => {
    // Hours starting inside [start, now) count fully; the one hour straddling `start` counts
    // its share clamp((h + 1h - start) / 1h, 0, 1). Everything is summed in float8 (exact for
    // these magnitudes): numeric arithmetic per row made this query several times slower.
    const from = new Date(start).toISOString()
    const share = sql`(date_part('epoch', h.hour - ${from}::timestamptz) / 3600 + 1)`
    const boundary = sql`h.hour > ${from}::timestamptz - interval '1 hour' AND h.hour < ${from}::timestamptz`
    const total = (column: "up_ms" | "down_ms") =>
      sql`coalesce(sum(h.${sql.literal(column)}::float8) FILTER (WHERE h.hour >= ${from}::timestamptz), 0)
        + coalesce(sum(h.${sql.literal(column)}::float8 * ${share}) FILTER (WHERE ${boundary}), 0)`
    return [
      sql`${total("up_ms")} AS ${sql.literal(`up_${i}`)}`,
      sql`${total("down_ms")} AS ${sql.literal(`down_${i}`)}`
    ]
  })
  return sql`
    SELECT m.id, r.*
    FROM unnest(${monitorIds}::text[]) AS m(id)
    LEFT JOIN LATERAL (
      SELECT ${sql.csv(sums)}
      FROM monitor_uptime_hourly h
      WHERE h.monitor_id = m.id
        AND h.hour > ${earliest}::timestamptz - interval '1 hour'
        AND h.hour < ${now.toISOString()}::timestamptz
    ) r ON true`.pipe(decodeRows(totalsRow(starts.length)))
}

const DailyRow = Schema.Struct({
  monitorId: Schema.String,
  date: Schema.String,
  upMs: Schema.Number,
  downMs: Schema.Number
})

/** Up and down milliseconds per monitor per UTC day from `from`; days without rows are absent. */
export const dailyRollups = (sql: SqlClient.SqlClient, monitorIds: ReadonlyArray<string>, from: Date) =>
  sql`
    SELECT monitor_id AS "monitorId", to_char(hour AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS date,
      sum(up_ms)::float8 AS "upMs", sum(down_ms)::float8 AS "downMs"
    FROM monitor_uptime_hourly
    WHERE monitor_id IN ${sql.in([...monitorIds])} AND hour >= ${from.toISOString()}::timestamptz
    GROUP BY 1, 2 ORDER BY 1, 2`.pipe(decodeRows(DailyRow))
