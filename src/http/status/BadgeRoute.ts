import { Effect, Result } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { BadgeQuery } from "../../../schemas/status/Status.ts"
import { BADGE_DEFAULTS, notFoundBadge, uptimeBadge } from "../../../services/status/Badge.ts"
import { StatusSummary } from "../../../services/status/StatusSummary.ts"
import { decodeQuery, takePublicLimit } from "./publicAccess.ts"

/**
 * `GET /api/v1/badge/{slug}/{monitorId}?style=&label=&period=`: an SVG of the monitor's
 * uptime (GUIDE §6). An unknown style or period is a JSON 400; an unknown organization or
 * monitor a grey "not found" badge with 404, so an embedded image still shows something.
 */
export const BadgeRoute = HttpRouter.add("GET", "/api/v1/badge/:slug/:monitorId", (request) =>
  Effect.gen(function*() {
    const limit = yield* takePublicLimit("badge", request)
    if (!limit.allowed) return limit.rejection
    const query = decodeQuery(BadgeQuery, request)
    if (Result.isFailure(query)) return HttpServerResponse.setHeaders(query.failure, limit.headers)
    const style = query.success.style ?? BADGE_DEFAULTS.style
    const label = query.success.label ?? BADGE_DEFAULTS.label
    const { monitorId, slug } = yield* HttpRouter.params
    const monitor = yield* Effect.option(
      (yield* StatusSummary).monitorUptime(slug ?? "", monitorId ?? "", query.success.period ?? BADGE_DEFAULTS.period)
    )
    const svg = monitor._tag === "Some" ? uptimeBadge(monitor.value.uptime, label, style) : notFoundBadge(label, style)
    return HttpServerResponse.text(svg, {
      status: monitor._tag === "Some" ? 200 : 404,
      contentType: "image/svg+xml; charset=utf-8",
      // Short, so README badges follow the monitor; image proxies (GitHub's camo) honour it.
      headers: { ...limit.headers, "cache-control": "public, max-age=60" }
    })
  }))
