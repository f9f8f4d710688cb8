import { Clock, Effect, Layer, Option } from "effect"
import { HttpRouter } from "effect/http"
import { Monitors } from "../../../services/monitors/Monitors.ts"
import { Uptime } from "../../../services/monitors/Uptime.ts"
import { PublicRateLimit } from "../../../services/ratelimits/PublicRateLimit.ts"
import { rendered, StatusCache } from "../../../services/status/StatusCache.ts"
import { StatusSummary } from "../../../services/status/StatusSummary.ts"
import { dateRange, uptimeBars } from "../../../services/status/UptimeBars.ts"
import type { OrganizationName } from "../../../services/tenancy/Tenancy.ts"
import { clientIp } from "../Edge.ts"
import { htmlResponse, messagePage } from "../html.ts"
import { cachedResponse, SHORT_CACHE } from "./cachedResponse.ts"
import { type PageRow, renderStatusPage } from "./renderStatusPage.ts"

/**
 * `GET /status/{slug}`: the public status page, rendered on the server from the status
 * summary, the daily uptime rollups and the incidents, then kept current by `status.js`
 * over the live stream. Limited per client IP like the status summary.
 */
const DAYS = 90
/** Resolved incidents read for the 90-day history (the newest first). */
const PAST_INCIDENTS = 100

const notFound = htmlResponse(
  messagePage({ title: "Status page not found", message: "There is no status page at this address." }),
  404
)

/** The page's HTML for an organization: summary, daily uptime rows and incidents. */
const renderPage = (org: OrganizationName) =>
  Effect.gen(function*() {
    const statusSummary = yield* StatusSummary
    const summary = yield* statusSummary.forOrganization(org.id)
    const now = yield* Clock.currentTimeMillis
    const dates = dateRange(now, DAYS)

    let rows: ReadonlyArray<PageRow>
    const uptime = yield* Uptime
    if (summary.components.length > 0) {
      const ids = summary.components.flatMap((component) => component.monitors.map((monitor) => monitor.id))
      const daily = yield* uptime.daily(ids, DAYS)
      rows = summary.components.map((component) => ({
        kind: "component",
        id: component.id,
        name: component.name,
        status: component.status,
        ...uptimeBars(dates, component.monitors.map((monitor) => monitor.id), daily, now, component.status)
      }))
    } else {
      // No components defined: every active monitor is a row of its own.
      const { monitors } = yield* (yield* Monitors).list(org.id, { active: true, limit: 100 })
      const daily = yield* uptime.daily(monitors.map((monitor) => monitor.id), DAYS)
      rows = monitors.map((monitor) => ({
        kind: "monitor",
        id: monitor.id,
        name: monitor.name,
        status: monitor.status,
        ...uptimeBars(dates, [monitor.id], daily, now, monitor.status)
      }))
    }

    // What an incident card names: the components its monitors belong to, else the monitors.
    const monitorNames = new Map<string, Array<string>>()
    for (const row of summary.components) {
      for (const monitor of row.monitors) {
        monitorNames.set(monitor.id, [...(monitorNames.get(monitor.id) ?? []), row.name])
      }
    }
    if (summary.components.length === 0) {
      for (const row of rows) monitorNames.set(row.id, [row.name])
    }

    const incidents = yield* statusSummary.incidents(org.id, PAST_INCIDENTS)
    return rendered(
      renderStatusPage({
        slug: org.slug,
        orgName: org.name,
        logoVersion: org.logoEtag,
        summary,
        rows,
        activeIncidents: incidents.active,
        pastIncidents: incidents.past,
        monitorNames,
        now,
        historyDays: DAYS
      }),
      "text/html; charset=utf-8"
    )
  })

export const StatusPageRoute = HttpRouter.add("GET", "/status/:slug", (request) =>
  Effect.gen(function*() {
    const limits = yield* PublicRateLimit
    const decision = yield* limits.take("status", clientIp(request))
    if (!decision.allowed) {
      return htmlResponse(messagePage({ title: "Too many requests", message: "Try again in a minute." }), 429)
    }
    const { slug } = yield* HttpRouter.params
    const cache = yield* StatusCache
    const org = yield* Effect.option(cache.organization(slug ?? ""))
    if (Option.isNone(org)) return notFound
    const entry = yield* cache.get(org.value.id, "page", renderPage(org.value))
    return cachedResponse(request, entry, SHORT_CACHE, { "referrer-policy": "no-referrer" })
  }))

export const StatusPages = Layer.mergeAll(StatusPageRoute)
