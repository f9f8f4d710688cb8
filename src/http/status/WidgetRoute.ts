import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { StatusSummary } from "../../../services/status/StatusSummary.ts"
import { errorResponse } from "../ErrorResponse.ts"
import { takePublicLimit } from "./publicAccess.ts"

/** Any site may read the widget from a browser: no credentials, so `*` is safe. */
const corsHeaders = {
  "access-control-allow-origin": "*",
  "access-control-expose-headers": "x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset, retry-after"
}

const path = "/api/v1/widget/:slug"

/** `GET /api/v1/widget/{slug}`: the widget data (spec), CORS-enabled, 100 per minute per IP. */
const widget = HttpRouter.add("GET", path, (request) =>
  Effect.gen(function*() {
    const limit = yield* takePublicLimit("widget", request)
    if (!limit.allowed) return HttpServerResponse.setHeaders(limit.rejection, corsHeaders)
    const { slug } = yield* HttpRouter.params
    const data = yield* Effect.option((yield* StatusSummary).widget(slug ?? ""))
    const response = data._tag === "Some"
      ? HttpServerResponse.jsonUnsafe(data.value, { headers: { "cache-control": "public, max-age=30" } })
      : errorResponse(404, "not_found", "No status page here")
    return HttpServerResponse.setHeaders(response, { ...limit.headers, ...corsHeaders })
  }))

/** The CORS preflight: not counted against the limit, cacheable by the browser for a day. */
const preflight = HttpRouter.add("OPTIONS", path, () =>
  Effect.succeed(HttpServerResponse.empty({
    status: 204,
    headers: {
      ...corsHeaders,
      "access-control-allow-methods": "GET, OPTIONS",
      "access-control-allow-headers": "content-type, accept",
      "access-control-max-age": "86400"
    }
  })))

export const WidgetRoutes = Layer.mergeAll(widget, preflight)
