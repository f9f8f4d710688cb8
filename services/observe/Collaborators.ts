import { Context, Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"

/**
 * What ingestion needs from the source-map and performance services (`SourceMaps.ts`,
 * `Performance.ts`), behind two small interfaces so the pipeline is wired to them in one
 * place (`layers/App.ts`) and tested without them.
 */

export interface IngestFrame {
  readonly filename?: string | undefined
  readonly function?: string | undefined
  readonly lineno?: number | undefined
  readonly colno?: number | undefined
  readonly in_app?: boolean | undefined
}

/** Maps minified frames to their sources (before fingerprinting); the mapped ones keep the original as `raw`. */
export class FrameSymbolicator extends Context.Service<FrameSymbolicator, {
  symbolicate<F extends IngestFrame>(
    orgId: string,
    release: string | undefined,
    frames: ReadonlyArray<F>
  ): Effect.Effect<ReadonlyArray<F & { readonly raw?: IngestFrame | undefined }>>
}>()("canopy/observe/FrameSymbolicator") {
  /** Frames as they came (no source maps). */
  static readonly identity = Layer.succeed(FrameSymbolicator)({
    symbolicate: (_orgId, _release, frames) => Effect.succeed(frames)
  })
}

export interface IngestSpan {
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

/** Receives the spans of a group commit, inside its transaction. */
export class SpanRecorder extends Context.Service<SpanRecorder, {
  recordSpans(orgId: string, spans: ReadonlyArray<IngestSpan>): Effect.Effect<void, SqlError, SqlClient.SqlClient>
}>()("canopy/observe/SpanRecorder") {
  /** Without the performance service: spans are counted per release (by the writer) and not kept. */
  static readonly countsOnly = Layer.succeed(SpanRecorder)({ recordSpans: () => Effect.void })
}

/**
 * The time the ingest entity samples by (Unix milliseconds). Tests replace it to hold a
 * burst inside one minute without waiting for the wall clock.
 */
export const IngestClock = Context.Reference<{ readonly now: () => number }>("canopy/observe/IngestClock", {
  defaultValue: () => ({ now: () => Date.now() })
})
