import { Context, Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { PerformanceStats } from "../../schemas/Performance.ts"

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

/** Spans, their hourly rollups with latency sketches, and the statistics served from them. */
export class Performance extends Context.Service<Performance, {
  /**
   * Writes spans and folds them into the rollups, in the caller's transaction (the ingest
   * group commit): a fixed number of statements whatever the number of spans.
   */
  recordSpans(
    orgId: string,
    spans: ReadonlyArray<SpanInput>
  ): Effect.Effect<void, SqlError, SqlClient.SqlClient>
  stats(orgId: string, filter: StatsFilter): Effect.Effect<PerformanceStats>
}>()("canopy/observe/Performance") {
  static readonly layer = Layer.succeed(Performance, {
    recordSpans: () => Effect.void,
    stats: () => Effect.succeed({ avgLatency: 0, p95Latency: 0, totalSpans: 0, errorRate: 0, latencyHistory: [] })
  })
}
