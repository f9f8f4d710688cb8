import { Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { Incidents } from "../../../services/incidents/Incidents.ts"
import { AppConfig } from "../../../services/platform/AppConfig.ts"
import { FEED_ITEMS, renderFeed } from "../../../services/status/Feed.ts"
import { rendered, StatusCache } from "../../../services/status/StatusCache.ts"
import { errorResponse } from "../ErrorResponse.ts"
import { cachedResponse, FEED_CACHE } from "./cachedResponse.ts"
import { takePublicLimit } from "./publicAccess.ts"

/**
 * `GET /api/v1/feed/{slug}`: the RSS 2.0 incident feed, cacheable for 5 minutes (spec), from
 * the runner's cache of rendered bytes; feed readers that send back the ETag get a 304.
 */
export const FeedRoute = HttpRouter.add("GET", "/api/v1/feed/:slug", (request) =>
  Effect.gen(function*() {
    const limit = yield* takePublicLimit("feed", request)
    if (!limit.allowed) return limit.rejection
    const { slug } = yield* HttpRouter.params
    const cache = yield* StatusCache
    const org = yield* Effect.option(cache.organization(slug ?? ""))
    if (org._tag === "None") {
      return HttpServerResponse.setHeaders(errorResponse(404, "not_found", "No status page here"), limit.headers)
    }
    const base = (yield* AppConfig).baseUrl.replace(/\/+$/, "")
    const incidents = yield* Incidents
    const entry = yield* cache.get(
      org.value.id,
      "feed",
      Effect.map(incidents.list(org.value.id, { limit: FEED_ITEMS }), ({ incidents }) =>
        rendered(
          renderFeed({
            orgName: org.value.name,
            pageUrl: `${base}/status/${org.value.slug}`,
            feedUrl: `${base}/api/v1/feed/${org.value.slug}`,
            incidents
          }),
          "application/rss+xml; charset=utf-8"
        ))
    )
    return cachedResponse(request, entry, FEED_CACHE, limit.headers)
  }))
