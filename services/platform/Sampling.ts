import { Option, Tracer } from "effect"

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
 * `tracer` with `sampler` deciding each trace's root. Effect already passes `sampled: false`
 * down from an unsampled parent; this only decides spans without a parent in this process.
 */
export const samplingTracer = (tracer: Tracer.Tracer, sampler: Sampler): Tracer.Tracer =>
  Tracer.make({
    span(options) {
      const parent = Option.getOrUndefined(options.parent)
      if (parent !== undefined && (parent._tag === "Span" || sampler.parentBased)) return tracer.span(options)
      if (!options.sampled && parent === undefined) return tracer.span(options)
      if (sampler.root === "on") return tracer.span(parent === undefined ? options : { ...options, sampled: true })
      if (sampler.root === "off") return tracer.span({ ...options, sampled: false })
      if (parent !== undefined) return tracer.span({ ...options, sampled: keepsTraceId(parent.traceId, sampler.ratio) })
      // A root's trace id is made with its span: decide on it, and make an unsampled span instead if it loses.
      const span = tracer.span(options)
      return keepsTraceId(span.traceId, sampler.ratio) ? span : tracer.span({ ...options, sampled: false })
    },
    ...(tracer.context === undefined ? {} : { context: tracer.context })
  })
