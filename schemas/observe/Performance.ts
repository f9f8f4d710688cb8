import { Schema } from "effect"
import { IsoTimestamp, parseIsoTimestamp } from "../monitors/Monitors.ts"

/**
 * Performance statistics over ingested spans (spec "Performance statistics"; GUIDE §7).
 *
 * Wire choices where the spec is silent:
 * - Query `from`/`to` are ISO 8601 (default: the last 7 days up to now), at most 366 days
 *   apart; statistics come from hourly and daily rollups, so the window is whole UTC hours:
 *   `from` is rounded down to its hour and the hour holding `to` counts whole.
 * - Latencies in milliseconds; `p95Latency` is the nearest-rank 95th percentile (the value
 *   at rank ⌈0.95·n⌉), estimated from a sketch within 1% of the exact value.
 * - Without spans every figure is 0. `latencyHistory` has one entry per UTC day of the
 *   window, oldest first, including empty days (`count` 0).
 */

export const MAX_RANGE_DAYS = 366

const filter = Schema.optional(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(1024)))

export const PerformanceQuery = Schema.Struct({
  from: Schema.optional(IsoTimestamp),
  to: Schema.optional(IsoTimestamp),
  release: filter,
  environment: filter,
  name: filter
}).check(Schema.makeFilter((query) => {
  const from = query.from === undefined ? undefined : parseIsoTimestamp(query.from)
  const to = query.to === undefined ? undefined : parseIsoTimestamp(query.to)
  if (from === undefined || to === undefined) return undefined
  if (from.getTime() > to.getTime()) return { path: ["from"], issue: "must not be after to" }
  return to.getTime() - from.getTime() > MAX_RANGE_DAYS * 86_400_000
    ? { path: ["from"], issue: `must be at most ${MAX_RANGE_DAYS} days before to` }
    : undefined
}))
export type PerformanceQuery = typeof PerformanceQuery.Type

export const LatencyDay = Schema.Struct({
  /** UTC calendar day, `YYYY-MM-DD`. */
  date: Schema.String,
  avg: Schema.Number,
  p95: Schema.Number,
  count: Schema.Int
})
export type LatencyDay = typeof LatencyDay.Type

export const PerformanceStats = Schema.Struct({
  avgLatency: Schema.Number,
  p95Latency: Schema.Number,
  totalSpans: Schema.Int,
  /** Share of spans with status `error`, 0..1. */
  errorRate: Schema.Number,
  latencyHistory: Schema.Array(LatencyDay)
})
export type PerformanceStats = typeof PerformanceStats.Type
