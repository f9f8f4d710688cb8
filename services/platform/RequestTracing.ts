import { Clock, Context, Exit, type Fiber, Option, Tracer } from "effect"
import { type HttpServerRequest, HttpTraceContext } from "effect/http"

/**
 * A request's server span, made by Canopy's edge middleware rather than Effect's HTTP server.
 * Effect's server takes a longer path for every request its tracer is on for (its tracer
 * middleware, a continuation more), also for the 90% a 10% sampler drops, and its span carries
 * the whole URL and every header as attributes, built for each kept request (issue 32 item 5).
 * So the server never traces (`HttpMiddleware.TracerDisabledWhen`) and the edge, told by this
 * reference that tracing is on, makes the span. Spans inside stay in the caller's trace either
 * way, and nothing of a dropped one is exported.
 */
export class RequestTracing extends Context.Reference<boolean>(
  "canopy/platform/RequestTracing",
  { defaultValue: () => false }
) {}

/** The request's fiber: its tracer and its clock. */
type RequestFiber = Pick<Fiber.Fiber<unknown, unknown>, "getRef">

export interface RequestTrace {
  /** What the handler's spans hang under. */
  readonly parent: Tracer.AnySpan
  /** The server span, when the trace is kept. */
  readonly server: Tracer.Span | undefined
}

/** The caller's span context, from `traceparent` or B3 headers. */
const callerOf = (headers: HttpServerRequest.HttpServerRequest["headers"]): Tracer.ExternalSpan | undefined =>
  "traceparent" in headers || "b3" in headers || "x-b3-traceid" in headers
    ? Option.getOrUndefined(HttpTraceContext.fromHeaders(headers))
    : undefined

/**
 * Decides `request`'s trace: the sampling tracer makes its server span, kept or not, by the rule
 * every span follows (a caller's span context and flag, or a root decided on its own trace id).
 * A dropped one is a cheap unsampled span with ids made only if something asks (an outgoing
 * `traceparent`, a JSON log line), and the handler's spans hang under it just the same.
 */
export const startRequestTrace = (fiber: RequestFiber, request: HttpServerRequest.HttpServerRequest): RequestTrace => {
  const caller = callerOf(request.headers)
  const span = fiber.getRef(Tracer.Tracer).span({
    // Effect's name for a server span, as before Canopy made them.
    name: `http.server ${request.method}`,
    parent: Option.fromUndefinedOr(caller),
    annotations: Context.empty(),
    links: [],
    startTime: fiber.getRef(Clock.Clock).currentTimeNanosUnsafe(),
    kind: "server",
    root: false,
    sampled: caller?.sampled ?? true
  })
  if (!span.sampled) return { parent: span, server: undefined }
  const queryAt = request.url.indexOf("?")
  span.attribute("http.request.method", request.method)
  // The path only: a query may carry a key (e.g. Sentry's `sentry_key`).
  span.attribute("url.path", queryAt < 0 ? request.url : request.url.slice(0, queryAt))
  const agent = request.headers["user-agent"]
  if (agent !== undefined) span.attribute("user_agent.original", agent)
  return { parent: span, server: span }
}

/**
 * Ends a kept server span with the response's status: an error only for a 5xx (OpenTelemetry's
 * rule). The router has added its `http.route` if it matched one.
 */
export const endServerSpan = (fiber: RequestFiber, span: Tracer.Span, status: number): void => {
  span.attribute("http.response.status_code", status)
  span.end(
    fiber.getRef(Clock.Clock).currentTimeNanosUnsafe(),
    status >= 500 ? Exit.fail(new Error(`HTTP ${status}`)) : Exit.void
  )
}
