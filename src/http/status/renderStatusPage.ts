import type { OverallStatus, StatusSummary } from "../../../schemas/status/Status.ts"
import type { UptimeDay } from "../../../services/status/UptimeBars.ts"
import { escapeHtml, pageShell } from "../html.ts"
import { incidentCard, incidentHistory, isScheduled, type PageIncident, statusLabel } from "./renderIncidents.ts"

/**
 * The public status page as HTML (GUIDE §6), from data the route gathers. The markup
 * carries `data-*` hooks that `status.js` uses to apply live events without a reload; the
 * incident card markup is mirrored there (`incidentCard`), so keep the two in step.
 */
export { incidentCard } from "./renderIncidents.ts"

export type { UptimeDay } from "../../../services/status/UptimeBars.ts"

export interface PageRow {
  /** `component` rows group monitors; `monitor` rows stand alone (an organization without components). */
  readonly kind: "component" | "monitor"
  readonly id: string
  readonly name: string
  readonly status: string
  readonly days: ReadonlyArray<UptimeDay>
  /** Over the days with data; null without any. */
  readonly uptime: number | null
}

export interface StatusPageModel {
  readonly slug: string
  readonly orgName: string
  /** The version (ETag) of Canopy's copy of the organization's logo; none: the initial instead. */
  readonly logoVersion?: string | null | undefined
  readonly summary: StatusSummary
  readonly rows: ReadonlyArray<PageRow>
  readonly activeIncidents: ReadonlyArray<PageIncident>
  /** Resolved incidents; those of the last `historyDays` days are shown, grouped by day. */
  readonly pastIncidents: ReadonlyArray<PageIncident>
  /** Names of what each monitor belongs to on this page (its components, else its own name). */
  readonly monitorNames?: ReadonlyMap<string, ReadonlyArray<string>> | undefined
  /** Render time (epoch ms): places maintenance windows and the history. Default: now. */
  readonly now?: number | undefined
  readonly historyDays?: number | undefined
}

export const overallText: Record<OverallStatus, string> = {
  operational: "All Systems Operational",
  degraded: "Degraded Performance",
  partial_outage: "Partial System Outage",
  major_outage: "Major System Outage"
}

const rowStatusText: Record<string, string> = {
  operational: "Operational",
  degraded: "Degraded Performance",
  partial_outage: "Partial Outage",
  major_outage: "Major Outage",
  up: "Operational",
  pending: "Operational",
  down: "Major Outage",
  paused: "Paused"
}

const formatPercent = (value: number) => `${(Math.floor(value * 100) / 100).toFixed(2)}%`

const bars = (days: ReadonlyArray<UptimeDay>) =>
  days.map((day) => {
    const label = day.uptime === null ? `${day.date}: no data` : `${day.date}: ${formatPercent(day.uptime)} uptime`
    return `<span class="bar ${day.level}" title="${label}"></span>`
  }).join("")

const row = (item: PageRow) =>
  `<li class="row" data-${item.kind}-id="${escapeHtml(item.id)}">
<div class="row-head"><span class="row-name">${escapeHtml(item.name)}</span>
<span class="row-status status-${escapeHtml(item.status)}" data-status>${
    escapeHtml(rowStatusText[item.status] ?? item.status)
  }</span></div>
<div class="bars" aria-label="Uptime over the last ${item.days.length} days">${bars(item.days)}</div>
<div class="row-foot"><span class="wide-only">${item.days.length} days ago</span><span class="phone-only">30 days ago</span><span class="rule"></span><span>${
    item.uptime === null ? "No data yet" : `${formatPercent(item.uptime)} uptime`
  }</span><span class="rule"></span><span>Today</span></div>
</li>`

const subscribeForm = (slug: string) =>
  `<section class="card subscribe" id="subscribe" hidden>
<h2>Get e-mail notifications</h2>
<p class="muted">We will e-mail you when an incident is created, updated or resolved. You can unsubscribe at any time.</p>
<form id="subscribe-form" data-slug="${escapeHtml(slug)}" novalidate>
<label for="subscribe-email">E-mail address</label>
<div class="field-row"><input id="subscribe-email" name="email" type="email" required autocomplete="email" placeholder="you@example.com">
<button type="submit" class="button">Subscribe</button></div>
<altcha-widget challenge="/api/v1/subscribe/challenge" name="altcha"></altcha-widget>
<p class="form-message" id="subscribe-message" role="status"></p>
</form>
</section>`

export const renderStatusPage = (model: StatusPageModel): string => {
  const overall = model.summary.overallStatus
  const now = model.now ?? Date.now()
  const affects = (incident: PageIncident) => [
    ...new Set((incident.affectedMonitors ?? []).flatMap((id) => model.monitorNames?.get(id) ?? []))
  ]
  const scheduled = model.activeIncidents.filter(isScheduled)
  const maintenance = [...scheduled].sort((a, b) => a.scheduledFor!.localeCompare(b.scheduledFor!)).map((incident) =>
    incidentCard(incident, affects(incident), now)
  ).join("")
  const active = model.activeIncidents.filter((incident) => !isScheduled(incident)).map((incident) =>
    incidentCard(incident, affects(incident), now)
  ).join("")
  const past = incidentHistory(model.pastIncidents, affects, now, model.historyDays ?? 90)
  return pageShell({
    title: `${model.orgName} Status`,
    head: `<link rel="alternate" type="application/rss+xml" title="${
      escapeHtml(model.orgName)
    } incidents" href="/api/v1/feed/${escapeHtml(model.slug)}">
<link rel="icon" href="/status-assets/favicon.svg" type="image/svg+xml">
<script type="module" src="/status-assets/altcha.js"></script>
<script type="application/json" id="status-labels">${
      // `<` escaped so no label can close the script element.
      JSON.stringify({ overall: overallText, rows: rowStatusText, incidents: statusLabel }).replace(
        /</g,
        "\\u003c"
      )}</script>
<script defer src="/status-assets/status.js"></script>`,
    body: `<header class="masthead"><div class="container masthead-inner">
<a class="brand" href="/status/${escapeHtml(model.slug)}">${
      // The logo from Canopy's own copy (versioned, so a new one is fetched at once): no third-party request.
      model.logoVersion
        ? `<img class="logo-image" src="/status/${escapeHtml(model.slug)}/logo?v=${
          encodeURIComponent(model.logoVersion)
        }" alt="${escapeHtml(model.orgName)} logo" height="36">`
        : `<span class="logo">${escapeHtml(model.orgName.slice(0, 1).toUpperCase())}</span>`}${
      escapeHtml(model.orgName)
    }</a>
<button class="button subscribe-toggle" type="button" aria-controls="subscribe">Subscribe to updates</button>
</div></header>
<main class="container" data-slug="${escapeHtml(model.slug)}">
${subscribeForm(model.slug)}
<section class="overall status-${overall}" id="overall" data-overall="${overall}" data-live-section="overall">
<span class="overall-icon" aria-hidden="true"></span><h1 data-overall-text>${overallText[overall]}</h1>
<span class="live" id="live-indicator" title="Updates arrive live">Live</span>
</section>
<section id="active-incidents" class="incidents" data-live-section="active">${active}</section>
<section id="maintenance" class="incidents maintenance" data-live-section="maintenance">${
      maintenance === "" ? "" : `<h2>Scheduled maintenance</h2>${maintenance}`
    }</section>
<section class="card">
<div class="card-head"><h2>System status</h2><span class="muted">Uptime over the past 90 days</span></div>
<ul class="rows" data-live-section="rows">${
      model.rows.length === 0
        ? `<li class="row muted">No monitors are published yet.</li>`
        : model.rows.map(row).join("")
    }</ul>
<div class="legend">${
      [["good", "No downtime"], ["minor", "Minor"], ["partial", "Partial"], ["major", "Major"], ["none", "No data"]]
        .map(([level, label]) => `<span class="legend-item"><span class="bar ${level}"></span>${label}</span>`).join("")
    }</div>
</section>
<section class="past">
<h2>Past incidents</h2>
<div id="past-incidents" data-live-section="past">${past}</div>
</section>
</main>
<footer class="container footer"><a href="/api/v1/feed/${
      escapeHtml(model.slug)
    }">RSS feed</a><span>Powered by Canopy</span></footer>`
  })
}
