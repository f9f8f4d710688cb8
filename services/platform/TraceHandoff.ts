import { Context, Effect, Tracer } from "effect"

/**
 * The span a request was in when it queued work that another fiber sends later (a webhook's
 * test ping or redelivery), so the later request continues the same trace. In this process
 * only and bounded: work sent by another runner, or after a restart, starts a trace of its own.
 */
export interface TraceHandoffShape {
  /** Remembers the current span for `key`, when tracing is on. */
  readonly remember: (key: string) => Effect.Effect<void>
  /** The span remembered for `key`, once. */
  readonly take: (key: string) => Tracer.AnySpan | undefined
}

const CAPACITY = 10_000

export const makeTraceHandoff = (): TraceHandoffShape => {
  const spans = new Map<string, Tracer.AnySpan>()
  return {
    remember: (key) =>
      Effect.withFiber((fiber) => {
        const tracer = fiber.cache.tracer
        const span = fiber.cache.span
        if (span === undefined || tracer === undefined || tracer === Tracer.nativeTracer) return Effect.void
        if (spans.size >= CAPACITY) spans.delete(spans.keys().next().value!)
        spans.set(key, span)
        return Effect.void
      }),
    take: (key) => {
      const span = spans.get(key)
      if (span !== undefined) spans.delete(key)
      return span
    }
  }
}

/** One per process (delivery ids are unique), replaceable in tests. */
export const TraceHandoff = Context.Reference<TraceHandoffShape>("canopy/platform/TraceHandoff", {
  defaultValue: makeTraceHandoff
})
