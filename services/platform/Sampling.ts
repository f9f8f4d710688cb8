import { Option, Tracer } from "effect"
import { Hex } from "effect/encoding"

/**
 * The OpenTelemetry samplers of `OTEL_TRACES_SAMPLER`: `root` decides a trace that starts
 * here; `parentBased` makes a caller's `traceparent` decide instead. A span inside this
 * process always follows its parent, so a trace is kept or dropped whole.
 */
export interface Sampler {
  readonly parentBased: boolean
  readonly root: "on" | "off" | "ratio"
  /** For `ratio`: the share of traces kept, 0–1. */
  readonly ratio: number
}

/**
 * Whether `traceId` falls in the first `ratio` of the id space: the low 52 bits (random in W3C
 * trace ids) against the ratio, so every service using the same ratio keeps the same traces.
 */
export const keepsTraceId = (traceId: string, ratio: number): boolean =>
  ratio >= 1 || (ratio > 0 && Number.parseInt(traceId.slice(-13), 16) / 2 ** 52 < ratio)

/**
 * A span nobody exports: Effect's native one (ids made only when asked for, for a
 * `traceparent`), minus the attributes and events it would keep for nothing. Most spans under
 * a ratio sampler are these; they must cost next to nothing (issue 32 item 5).
 */
class UnsampledSpan extends Tracer.NativeSpan {
  override attribute(): void {}
  override event(): void {}
}

type SpanOptions = Parameters<Tracer.Tracer["span"]>[0]

/** An unsampled span, on `traceId` when given (a root decided before it existed). */
const unsampled = (options: SpanOptions, traceId?: string): Tracer.Span => {
  const span = new UnsampledSpan(options.sampled ? { ...options, sampled: false } : options)
  if (traceId !== undefined) span._traceId = traceId
  return span
}

/**
 * `span` carrying `traceId`: Effect's spans (the OTLP one as the native one) make their trace
 * id lazily into `_traceId`, so one set before anything reads it is the id they export.
 */
const onTraceId = (span: Tracer.Span, traceId: string): Tracer.Span => {
  if ("_traceId" in span && span._traceId === undefined) (span as { _traceId: string | undefined })._traceId = traceId
  return span
}

/**
 * `tracer` with `sampler` deciding each trace's root. Effect already passes `sampled: false`
 * down from an unsampled parent; this only decides spans without a parent in this process,
 * and makes every unsampled span a cheap `UnsampledSpan` instead of the exporter's.
 */
export const samplingTracer = (tracer: Tracer.Tracer, sampler: Sampler): Tracer.Tracer =>
  Tracer.make({
    span(options) {
      const parent = Option.getOrUndefined(options.parent)
      if (parent !== undefined && (parent._tag === "Span" || sampler.parentBased)) {
        return options.sampled ? tracer.span(options) : unsampled(options)
      }
      if (!options.sampled && parent === undefined) return unsampled(options)
      // A root here, or a caller's span context the sampler does not follow.
      const kept = parent === undefined ? options : { ...options, sampled: true }
      if (sampler.root !== "ratio") return sampler.root === "on" ? tracer.span(kept) : unsampled(options)
      if (parent !== undefined) {
        return keepsTraceId(parent.traceId, sampler.ratio) ? tracer.span(kept) : unsampled(options)
      }
      // Decided on a trace id made here, before any span: a losing root costs one cheap span.
      const traceId = Hex.random(32)
      return keepsTraceId(traceId, sampler.ratio)
        ? onTraceId(tracer.span(options), traceId)
        : unsampled(options, traceId)
    },
    ...(tracer.context === undefined ? {} : { context: tracer.context })
  })
