import { Clock, Context, Exit, type Fiber, Option, Tracer } from "effect"
import { Hex } from "effect/encoding"
import { type HttpServerRequest, HttpTraceContext } from "effect/http"
import { handRootTraceId, keepsRemote, type Sampler } from "./Sampling.ts"

/**
 * A request's server span, made by Canopy's edge middleware rather than Effect's HTTP server.
 * Effect's server takes a longer path for every request its tracer is on for (its tracer
 * middleware, a continuation more), also for the 90% a 10% sampler drops, and its span carries
 * the whole URL and every header as attributes, built for each kept request (issue 32 item 5).
 * So the server never traces (`HttpMiddleware.TracerDisabledWhen`), and the edge decides each
 * request by the rule spans follow (`keepsRemote`), then gives its handler either a kept server
 * span or an unsampled parent: the caller's span context with its flag, or a root whose ids are
 * made only if something asks (an outgoing `traceparent`). Spans inside stay in the caller's
 * trace either way, and nothing of a dropped one is exported.
 */
export class RequestTracing extends Context.Reference<{ readonly sampler: Sampler } | undefined>(
  "canopy/platform/RequestTracing",
  { defaultValue: () => undefined }
) {}

/** The root of a dropped trace that started here. */
class DroppedRoot implements Tracer.ExternalSpan {
  readonly _tag = "ExternalSpan"
  readonly sampled = false
  readonly annotations = Context.empty()
  #traceId: string | undefined
  #spanId: string | undefined
  constructor(traceId: string | undefined) {
    this.#traceId = traceId
  }
  get traceId(): string {
    return this.#traceId ??= Hex.random(32)
  }
  get spanId(): string {
    return this.#spanId ??= Hex.random(16)
  }
}

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

const serverSpan = (
  fiber: RequestFiber,
  request: HttpServerRequest.HttpServerRequest,
  caller: Tracer.ExternalSpan | undefined
): Tracer.Span => {
  const span = fiber.getRef(Tracer.Tracer).span({
    // Effect's name for a server span, as before Canopy made them.
    name: `http.server ${request.method}`,
    parent: Option.fromUndefinedOr(caller),
    annotations: Context.empty(),
    links: [],
    startTime: fiber.getRef(Clock.Clock).currentTimeNanosUnsafe(),
    kind: "server",
    root: false,
    sampled: true
  })
  const queryAt = request.url.indexOf("?")
  span.attribute("http.request.method", request.method)
  // The path only: a query may carry a key (e.g. Sentry's `sentry_key`).
  span.attribute("url.path", queryAt < 0 ? request.url : request.url.slice(0, queryAt))
  const agent = request.headers["user-agent"]
  if (agent !== undefined) span.attribute("user_agent.original", agent)
  return span
}

/** Decides `request`'s trace under `sampler`. */
export const startRequestTrace = (
  fiber: RequestFiber,
  request: HttpServerRequest.HttpServerRequest,
  sampler: Sampler
): RequestTrace => {
  const caller = callerOf(request.headers)
  if (caller !== undefined) {
    if (keepsRemote(sampler, caller, () => caller.traceId)) {
      const server = serverSpan(fiber, request, caller)
      return { parent: server, server }
    }
    return { parent: caller.sampled ? Tracer.externalSpan({ ...caller, sampled: false }) : caller, server: undefined }
  }
  let traceId: string | undefined
  if (!keepsRemote(sampler, undefined, () => traceId = Hex.random(32))) {
    return { parent: new DroppedRoot(traceId), server: undefined }
  }
  // The sampler decides a root on a trace id of its own: it takes the one drawn here.
  if (traceId !== undefined) handRootTraceId(traceId)
  const server = serverSpan(fiber, request, undefined)
  return { parent: server, server }
}

/** Ends a kept server span with the response's status: an error only for a 5xx (OpenTelemetry's rule). */
export const endServerSpan = (
  fiber: RequestFiber,
  span: Tracer.Span,
  status: number,
  route: string | undefined
): void => {
  if (route !== undefined) span.attribute("http.route", route)
  span.attribute("http.response.status_code", status)
  span.end(
    fiber.getRef(Clock.Clock).currentTimeNanosUnsafe(),
    status >= 500 ? Exit.fail(new Error(`HTTP ${status}`)) : Exit.void
  )
}
