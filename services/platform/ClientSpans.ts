import { Context, Effect, Exit, Option, Tracer } from "effect"
import { Clock } from "effect/Clock"
import { Headers, HttpTraceContext } from "effect/http"

/**
 * Client spans for the requests Canopy sends to user URLs with Node's own `http` (monitor
 * checks, webhook deliveries: their connections are pinned to SSRF-checked addresses, so
 * Effect's HttpClient, which would trace them itself, is not used), and the W3C `traceparent`
 * that tells the receiver which span called it. Nothing at all when tracing is off.
 */
export interface ClientSpan {
  /** `traceparent` naming this span: add it to the request. */
  readonly headers: Readonly<Record<string, string>>
  /** The response's status, or why there was none. */
  readonly end: (outcome: { readonly statusCode: number } | { readonly error: string }) => void
}

export interface ClientSpans {
  /** A client span under `parent` (default: the span current when `clientSpans` ran). */
  readonly start: (method: string, url: URL, parent?: Tracer.AnySpan) => ClientSpan
}

export const traceparent = (span: Tracer.AnySpan): string =>
  `00-${span.traceId.padStart(32, "0")}-${span.spanId}-${span.sampled ? "01" : "00"}`

/** Whether this fiber exports spans: a tracer other than Effect's native one is installed. */
const tracing = (fiber: { readonly cache: { readonly tracer: Tracer.Tracer | undefined } }) =>
  fiber.cache.tracer !== undefined && fiber.cache.tracer !== Tracer.nativeTracer

/**
 * The `traceparent` of the current span when tracing is on (else null), to store with work a
 * later request continues (an outbox event, a queued webhook delivery): see `parentOf`.
 */
export const currentTraceparent: Effect.Effect<string | null> = Effect.withFiber((fiber) =>
  Effect.succeed(tracing(fiber) && fiber.cache.span !== undefined ? traceparent(fiber.cache.span) : null)
)

/** The span a stored `traceparent` names, as the parent of a later client span (invalid or null: none). */
export const parentOf = (stored: string | null | undefined): Tracer.AnySpan | undefined =>
  stored == null
    ? undefined
    : Option.getOrUndefined(HttpTraceContext.w3c(Headers.fromRecordUnsafe({ traceparent: stored })))

/**
 * The span factory of the current fiber, for callback code that sends many requests without
 * a fiber each; `undefined` when tracing is off. Only the host goes on the span: a path or
 * query of a user URL may carry a token.
 */
export const clientSpans: Effect.Effect<ClientSpans | undefined> = Effect.withFiber((fiber) => {
  if (!tracing(fiber)) return Effect.succeed(undefined)
  const tracer = fiber.cache.tracer!
  const current = fiber.cache.span
  const clock = fiber.getRef(Clock)
  const spans: ClientSpans = {
    start(method, url, parent = current) {
      const span = tracer.span({
        name: method,
        parent: Option.fromNullishOr(parent),
        annotations: Context.empty(),
        links: [],
        startTime: clock.currentTimeNanosUnsafe(),
        kind: "client",
        root: parent === undefined,
        sampled: parent === undefined || parent.sampled
      })
      if (span.sampled) {
        span.attribute("http.request.method", method)
        span.attribute("server.address", url.hostname)
        span.attribute("url.scheme", url.protocol.replace(":", ""))
      }
      return {
        headers: { traceparent: traceparent(span) },
        end(outcome) {
          if ("statusCode" in outcome) span.attribute("http.response.status_code", outcome.statusCode)
          const failed = "error" in outcome || outcome.statusCode >= 400
          const message = "error" in outcome ? outcome.error : `HTTP ${outcome.statusCode}`
          span.end(clock.currentTimeNanosUnsafe(), failed ? Exit.fail(new Error(message)) : Exit.void)
        }
      }
    }
  }
  return Effect.succeed(spans)
})

/**
 * `send` with a client span around it and its `traceparent` in hand (empty when tracing is
 * off); the span ends with the status `statusOf` reads from the result, or the failure.
 */
export const withClientSpan = <A, E, R>(
  method: string,
  url: URL,
  statusOf: (result: A) => number,
  send: (headers: Readonly<Record<string, string>>) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.flatMap(clientSpans, (spans) => {
    if (spans === undefined) return send({})
    const span = spans.start(method, url)
    return Effect.onExit(send(span.headers), (exit) =>
      Effect.sync(() =>
        span.end(
          Exit.isSuccess(exit) ? { statusCode: statusOf(exit.value) } : { error: "request failed" }
        )
      ))
  })
