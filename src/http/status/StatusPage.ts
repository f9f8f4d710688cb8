import { Clock, Effect, Layer, Option } from "effect"
import { HttpRouter } from "effect/http"
import { Monitors } from "../../../services/monitors/Monitors.ts"
import type { DailyUptime } from "../../../services/monitors/Uptime.ts"
import { Uptime } from "../../../services/monitors/Uptime.ts"
import { PublicRateLimit } from "../../../services/ratelimits/PublicRateLimit.ts"
import { rendered, StatusCache } from "../../../services/status/StatusCache.ts"
import { type PublicOrganization, StatusSummary } from "../../../services/status/StatusSummary.ts"
import { clientIp } from "../Edge.ts"
import { htmlResponse, messagePage } from "../html.ts"
import { cachedResponse, SHORT_CACHE } from "./cachedResponse.ts"
import { type PageRow, renderStatusPage, type UptimeDay } from "./renderStatusPage.ts"

/**
 * `GET /status/{slug}`: the public status page, rendered on the server from the status
 * summary, the daily uptime rollups and the incidents, then kept current by `status.js`
 * over the live stream. Limited per client IP like the status summary.
 */
const DAYS = 90
const PAST_INCIDENTS = 10
const DAY_MS = 86_400_000

/** The last `DAYS` UTC dates, oldest first. */
const dateRange = (now: number): ReadonlyArray<string> =>
  Array.from({ length: DAYS }, (_, i) => new Date(now - (DAYS - 1 - i) * DAY_MS).toISOString().slice(0, 10))

/** Daily bars and the overall figure for a set of monitors (a component sums its monitors' time). */
const uptimeOf = (
  dates: ReadonlyArray<string>,
  monitorIds: ReadonlyArray<string>,
  daily: ReadonlyMap<string, ReadonlyArray<DailyUptime>>
): { days: ReadonlyArray<UptimeDay>; uptime: number | null } => {
  const byDate = new Map<string, { up: number; down: number }>()
  for (const id of monitorIds) {
    for (const day of daily.get(id) ?? []) {
      const sum = byDate.get(day.date) ?? { up: 0, down: 0 }
      byDate.set(day.date, { up: sum.up + day.upMs, down: sum.down + day.downMs })
    }
  }
  let up = 0
  let down = 0
  const days = dates.map((date) => {
    const sum = byDate.get(date)
    if (sum === undefined || sum.up + sum.down === 0) return { date, uptime: null }
    up += sum.up
    down += sum.down
    return { date, uptime: (sum.up / (sum.up + sum.down)) * 100 }
  })
  return { days, uptime: up + down === 0 ? null : (up / (up + down)) * 100 }
}

const notFound = htmlResponse(
  messagePage({ title: "Status page not found", message: "There is no status page at this address." }),
  404
)

/** The page's HTML for an organization: summary, daily uptime rows and incidents. */
const renderPage = (org: PublicOrganization) =>
  Effect.gen(function*() {
    const statusSummary = yield* StatusSummary
    const summary = yield* statusSummary.forOrganization(org.id)
    const dates = dateRange(yield* Clock.currentTimeMillis)

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
        ...uptimeOf(dates, component.monitors.map((monitor) => monitor.id), daily)
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
        ...uptimeOf(dates, [monitor.id], daily)
      }))
    }

    const incidents = yield* statusSummary.incidents(org.id, PAST_INCIDENTS)
    return rendered(
      renderStatusPage({
        slug: org.slug,
        orgName: org.name,
        summary,
        rows,
        activeIncidents: incidents.active,
        pastIncidents: incidents.past
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
