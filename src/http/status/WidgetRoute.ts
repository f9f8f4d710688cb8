import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { rendered, StatusCache } from "../../../services/status/StatusCache.ts"
import { StatusSummary } from "../../../services/status/StatusSummary.ts"
import { errorResponse } from "../ErrorResponse.ts"
import { cachedResponse, SHORT_CACHE } from "./cachedResponse.ts"
import { takePublicLimit } from "./publicAccess.ts"

/**
 * `GET /api/v1/widget/{slug}`: the widget data (spec), from the runner's cache of rendered
 * bytes, 100 per minute per IP. CORS (and its preflight) come from `PublicCors.ts`.
 */
const widget = HttpRouter.add("GET", "/api/v1/widget/:slug", (request) =>
  Effect.gen(function*() {
    const limit = yield* takePublicLimit("widget", request)
    if (!limit.allowed) return limit.rejection
    const { slug } = yield* HttpRouter.params
    const cache = yield* StatusCache
    const summaries = yield* StatusSummary
    const entry = yield* Effect.option(Effect.flatMap(cache.organization(slug ?? ""), (org) =>
      cache.get(
        org.id,
        "widget",
        Effect.map(summaries.widget(org.slug), (data) => rendered(JSON.stringify(data), "application/json"))
      )))
    if (entry._tag === "None") {
      return HttpServerResponse.setHeaders(errorResponse(404, "not_found", "No status page here"), limit.headers)
    }
    return cachedResponse(request, entry.value, SHORT_CACHE, limit.headers)
  }))

export const WidgetRoutes = Layer.mergeAll(widget)
