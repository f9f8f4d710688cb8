import { Context, Effect, Layer, type Metric } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { httpDuration, httpRequests, metricsEnabled } from "../../../services/metrics/Metrics.ts"

/**
 * `canopy_http_requests_total` and `canopy_http_request_duration_seconds`, labelled by the
 * route template (`/api/v1/monitors/:id`, never the raw path, so ids do not explode the
 * series), method and status.
 *
 * Two global middlewares, since no single position sees both: the recorder is the
 * outermost (it sees the final status, also of requests the edge answers before routing),
 * and the capture is the innermost, where the router has just put the matched route in the
 * fiber's context (middlewares in between restore their context on exit, which would hide
 * it). The capture writes the template into a slot the recorder provides. `layer` installs
 * both around `routes` in that order.
 */
class RouteSlot extends Context.Service<RouteSlot, { route: string | undefined }>()("canopy/metrics/RouteSlot") {}

type Counter = Metric.Metric<number, unknown>

/** Series by route → method → status, made once: a request costs three Map lookups. */
const counters = new Map<string, Map<string, Map<number, Counter>>>()
const histograms = new Map<string, Map<string, Counter>>()

const child = <K, V>(map: Map<K, V>, key: K, make: () => V): V => {
  let value = map.get(key)
  if (value === undefined) {
    value = make()
    map.set(key, value)
  }
  return value
}

const counterFor = (route: string, method: string, status: number) =>
  child(
    child(child(counters, route, () => new Map()), method, () => new Map()),
    status,
    () => httpRequests({ route, method, status: String(status) })
  )

const histogramFor = (route: string, method: string) =>
  child(child(histograms, route, () => new Map()), method, () => httpDuration({ route, method }))

/** Records one answered request: for raw paths that answer outside the router (the public fast path). */
export const recordHttpRequest = (route: string, method: string, status: number, startedMs: number): void => {
  if (!metricsEnabled()) return
  counterFor(route, method, status).updateUnsafe(1, Context.empty())
  histogramFor(route, method).updateUnsafe((performance.now() - startedMs) / 1000, Context.empty())
}

/** Node's parser accepts only known methods; anything unusual still gets one bounded label. */
const knownMethods = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

const Recorder = HttpRouter.middleware((httpEffect) =>
  Effect.withFiber((fiber) => {
    const started = performance.now()
    const context = fiber.context
    const request = Context.getUnsafe(context, HttpServerRequest.HttpServerRequest)
    const method = knownMethods.has(request.method) ? request.method : "OTHER"
    const slot: RouteSlot["Service"] = { route: undefined }
    return Effect.map(Effect.provideService(httpEffect, RouteSlot, slot), (response) => {
      const route = slot.route ?? "unmatched"
      counterFor(route, method, response.status).updateUnsafe(1, context)
      histogramFor(route, method).updateUnsafe((performance.now() - started) / 1000, context)
      return response
    })
  }), { global: true })

const Capture = HttpRouter.middleware((httpEffect) =>
  Effect.onExit(httpEffect, () =>
    Effect.withFiber((fiber) => {
      const slot = Context.getOrUndefined(fiber.context, RouteSlot)
      const matched = Context.getOrUndefined(fiber.context, HttpRouter.RouteContext)
      if (slot !== undefined && matched !== undefined) slot.route = matched.route.path
      return Effect.void
    })), { global: true })

/** `routes` with the recorder added before (outermost) and the capture after (innermost) them. */
export const withHttpMetrics = <A, E, R>(routes: Layer.Layer<A, E, R>) =>
  Capture.pipe(Layer.provideMerge(routes), Layer.provideMerge(Recorder))
