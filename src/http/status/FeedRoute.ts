import { Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { Incidents } from "../../../services/incidents/Incidents.ts"
import { AppConfig } from "../../../services/platform/AppConfig.ts"
import { sha256Hex } from "../../../services/platform/Crypto.ts"
import { FEED_ITEMS, renderFeed } from "../../../services/status/Feed.ts"
import { StatusSummary } from "../../../services/status/StatusSummary.ts"
import { errorResponse } from "../ErrorResponse.ts"
import { takePublicLimit } from "./publicAccess.ts"

/** `GET /api/v1/feed/{slug}`: the RSS 2.0 incident feed, cacheable for 5 minutes (spec), with an ETag. */
export const FeedRoute = HttpRouter.add("GET", "/api/v1/feed/:slug", (request) =>
  Effect.gen(function*() {
    const limit = yield* takePublicLimit("feed", request)
    if (!limit.allowed) return limit.rejection
    const { slug } = yield* HttpRouter.params
    const org = yield* Effect.option((yield* StatusSummary).organization(slug ?? ""))
    if (org._tag === "None") {
      return HttpServerResponse.setHeaders(errorResponse(404, "not_found", "No status page here"), limit.headers)
    }
    const base = (yield* AppConfig).baseUrl.replace(/\/+$/, "")
    const { incidents } = yield* (yield* Incidents).list(org.value.id, { limit: FEED_ITEMS })
    const xml = renderFeed({
      orgName: org.value.name,
      pageUrl: `${base}/status/${org.value.slug}`,
      feedUrl: `${base}/api/v1/feed/${org.value.slug}`,
      incidents
    })
    // Feed readers poll: an unchanged feed is a 304 to a reader that sends back the ETag.
    const etag = `"${sha256Hex(xml).slice(0, 32)}"`
    const headers = { ...limit.headers, "cache-control": "public, max-age=300", etag }
    if (request.headers["if-none-match"]?.split(/\s*,\s*/).includes(etag)) {
      return HttpServerResponse.empty({ status: 304, headers })
    }
    return HttpServerResponse.text(xml, { contentType: "application/rss+xml; charset=utf-8", headers })
  }))
