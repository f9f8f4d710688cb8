import { Context, Tracer } from "effect"
import { Hex } from "effect/encoding"
import { type HttpServerRequest, HttpTraceContext } from "effect/http"
import { handRootTraceId, keepsRemote, type Sampler } from "./Sampling.ts"

/**
 * An HTTP request's trace, decided before Effect's server span exists. Effect's HTTP server
 * serves a request its tracer is off for on a shorter path (no tracer middleware, no server
 * span, one continuation less): about 10 µs of `/api/v1/me`'s ~90 (issue 32 item 5). So a request
 * the sampler drops is made untraced there (`HttpMiddleware.TracerDisabledWhen`), and the edge
 * gives its handler an unsampled parent instead: the spans inside stay unsampled children of
 * the caller's trace (or of a trace id of its own), and outgoing `traceparent`s still carry it.
 */
type Decision =
  | { readonly kept: true; readonly traceId: string | undefined }
  | { readonly kept: false; readonly parent: Tracer.AnySpan }

/** Decided once per request: Effect asks twice (its server, then its tracer middleware). */
const decisions = new WeakMap<HttpServerRequest.HttpServerRequest, Decision>()

/** The root of a dropped trace that started here: ids made only if a `traceparent` needs them. */
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

const decide = (sampler: Sampler, request: HttpServerRequest.HttpServerRequest): Decision => {
  const headers = request.headers
  const caller = "traceparent" in headers || "b3" in headers || "x-b3-traceid" in headers
    ? HttpTraceContext.fromHeaders(headers)
    : undefined
  if (caller !== undefined && caller._tag === "Some") {
    const parent = caller.value
    return keepsRemote(sampler, parent, () => parent.traceId)
      ? { kept: true, traceId: undefined }
      : { kept: false, parent: parent.sampled ? Tracer.externalSpan({ ...parent, sampled: false }) : parent }
  }
  let traceId: string | undefined
  const kept = keepsRemote(sampler, undefined, () => traceId = Hex.random(32))
  return kept ? { kept, traceId } : { kept, parent: new DroppedRoot(traceId) }
}

/**
 * `HttpMiddleware.TracerDisabledWhen` for `sampler`: true for a request whose trace is dropped.
 * For a kept root it hands the trace id it drew to the server span Effect makes next.
 */
export const untracedWhen = (sampler: Sampler) => (request: HttpServerRequest.HttpServerRequest): boolean => {
  let decision = decisions.get(request)
  if (decision === undefined) {
    decision = decide(sampler, request)
    decisions.set(request, decision)
  }
  if (!decision.kept) return true
  if (decision.traceId !== undefined) handRootTraceId(decision.traceId)
  return false
}

/** The parent for the handler of a request whose trace was dropped; undefined when traced or tracing is off. */
export const droppedTraceParent = (request: HttpServerRequest.HttpServerRequest): Tracer.AnySpan | undefined => {
  const decision = decisions.get(request)
  return decision === undefined || decision.kept ? undefined : decision.parent
}
