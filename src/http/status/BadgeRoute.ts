import { Effect, Result } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { BadgeQuery } from "../../../schemas/status/Status.ts"
import { BADGE_DEFAULTS, notFoundBadge, uptimeBadge } from "../../../services/status/Badge.ts"
import { rendered, StatusCache } from "../../../services/status/StatusCache.ts"
import { StatusSummary } from "../../../services/status/StatusSummary.ts"
import { cachedResponse, SHORT_CACHE } from "./cachedResponse.ts"
import { decodeQuery, takePublicLimit } from "./publicAccess.ts"

const SVG = "image/svg+xml; charset=utf-8"

/**
 * `GET /api/v1/badge/{slug}/{monitorId}?style=&label=&period=`: an SVG of the monitor's
 * uptime (GUIDE §6), from the runner's cache of rendered bytes (one entry per monitor,
 * style, label and period). An unknown style or period is a JSON 400; an unknown
 * organization or monitor a grey "not found" badge with 404, so an embedded image still
 * shows something. Image proxies (GitHub's camo) honour the short Cache-Control.
 */
export const BadgeRoute = HttpRouter.add("GET", "/api/v1/badge/:slug/:monitorId", (request) =>
  Effect.gen(function*() {
    const limit = yield* takePublicLimit("badge", request)
    if (!limit.allowed) return limit.rejection
    const query = decodeQuery(BadgeQuery, request)
    if (Result.isFailure(query)) return HttpServerResponse.setHeaders(query.failure, limit.headers)
    const style = query.success.style ?? BADGE_DEFAULTS.style
    const label = query.success.label ?? BADGE_DEFAULTS.label
    const period = query.success.period ?? BADGE_DEFAULTS.period
    const { monitorId, slug } = yield* HttpRouter.params
    const cache = yield* StatusCache
    const summaries = yield* StatusSummary
    const org = yield* Effect.option(cache.organization(slug ?? ""))
    if (org._tag === "None") {
      return HttpServerResponse.text(notFoundBadge(label, style), {
        status: 404,
        contentType: SVG,
        headers: { ...limit.headers, "cache-control": SHORT_CACHE }
      })
    }
    const entry = yield* cache.get(
      org.value.id,
      JSON.stringify(["badge", monitorId, style, label, period]),
      summaries.monitorUptime(org.value.slug, monitorId ?? "", period).pipe(
        Effect.map((monitor) => rendered(uptimeBadge(monitor.uptime, label, style), SVG)),
        Effect.catch(() => Effect.succeed(rendered(notFoundBadge(label, style), SVG, 404)))
      )
    )
    return cachedResponse(request, entry, SHORT_CACHE, limit.headers)
  }))
