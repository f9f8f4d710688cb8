import { Context, type Metric } from "effect"
import { httpDuration, httpRequests, metricsEnabled } from "../../../services/metrics/Metrics.ts"

/**
 * `canopy_http_requests_total` and `canopy_http_request_duration_seconds`, labelled by the
 * route template (`/api/v1/monitors/:id`, never the raw path, so ids do not explode the
 * series), method and status.
 *
 * The edge middleware (outermost, `Edge.ts`) sees every final status, also of requests it
 * answers before routing, and records the request with `recordHttpRequest`. It finds the route
 * template where the router left it: the router puts the matched route in the fiber's context
 * and the request restores that context only when it ends. (A middleware of its own, even one
 * only reading the route after the handler, costs every request a frame more.)
 */

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

/** Node's parser accepts only known methods; anything unusual still gets one bounded label. */
const knownMethods = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

/** Records one answered request (`startedMs` from `performance.now()`), when metrics are on. */
export const recordHttpRequest = (route: string, method: string, status: number, startedMs: number): void => {
  if (!metricsEnabled()) return
  const label = knownMethods.has(method) ? method : "OTHER"
  counterFor(route, label, status).updateUnsafe(1, Context.empty())
  histogramFor(route, label).updateUnsafe((performance.now() - startedMs) / 1000, Context.empty())
}
