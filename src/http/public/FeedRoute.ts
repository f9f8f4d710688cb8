import { Clock, Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { Incidents } from "../../../services/incidents/Incidents.ts"
import { AppConfig } from "../../../services/platform/AppConfig.ts"
import { FEED_ITEMS, renderFeed } from "../../../services/status/Feed.ts"
import { StatusSummary } from "../../../services/status/StatusSummary.ts"
import { errorResponse } from "../ErrorResponse.ts"
import { takePublicLimit } from "./publicAccess.ts"

/** `GET /api/v1/feed/{slug}`: the RSS 2.0 incident feed, cacheable for 5 minutes (spec). */
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
      incidents,
      now: new Date(yield* Clock.currentTimeMillis)
    })
    return HttpServerResponse.text(xml, {
      contentType: "application/rss+xml; charset=utf-8",
      headers: { ...limit.headers, "cache-control": "public, max-age=300" }
    })
  }))
