import type { Incident } from "../../../schemas/incidents/Incidents.ts"
import type { OverallStatus, StatusSummary } from "../../../schemas/status/Status.ts"
import { escapeHtml, pageShell } from "../html.ts"

/**
 * The public status page as HTML (GUIDE §6), from data the route gathers. The markup
 * carries `data-*` hooks that `status.js` uses to apply live events without a reload; the
 * incident card markup is mirrored there (`incidentCard`), so keep the two in step.
 */
type PageIncident = Pick<Incident, "id" | "title" | "status" | "severity" | "updates">

export interface UptimeDay {
  readonly date: string
  /** Percentage, or null without data. */
  readonly uptime: number | null
}

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
  readonly summary: StatusSummary
  readonly rows: ReadonlyArray<PageRow>
  readonly activeIncidents: ReadonlyArray<PageIncident>
  readonly pastIncidents: ReadonlyArray<PageIncident>
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

const statusLabel: Record<string, string> = {
  investigating: "Investigating",
  identified: "Identified",
  monitoring: "Monitoring",
  resolved: "Resolved"
}

/** `2026-11-23 10:00 UTC`: readable, unambiguous, the same for every visitor. */
const when = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`

const dayClass = (uptime: number | null) =>
  uptime === null ? "none" : uptime >= 99.9 ? "good" : uptime >= 99 ? "minor" : uptime >= 95 ? "partial" : "major"

const formatPercent = (value: number) => `${(Math.floor(value * 100) / 100).toFixed(2)}%`

const bars = (days: ReadonlyArray<UptimeDay>) =>
  days.map((day) => {
    const label = day.uptime === null ? `${day.date}: no data` : `${day.date}: ${formatPercent(day.uptime)} uptime`
    return `<span class="bar ${dayClass(day.uptime)}" title="${label}"></span>`
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

export const incidentCard = (incident: PageIncident) => {
  const updates = [...incident.updates].reverse().map((update) =>
    `<li><strong>${escapeHtml(statusLabel[update.status] ?? update.status)}</strong> - ${
      escapeHtml(update.message)
    }<time datetime="${escapeHtml(update.createdAt)}">${when(update.createdAt)}</time></li>`
  ).join("")
  return `<article class="incident severity-${escapeHtml(incident.severity)} status-${
    escapeHtml(incident.status)
  }" data-incident-id="${escapeHtml(incident.id)}">
<h3>${escapeHtml(incident.title)}</h3>
<ol class="timeline">${updates}</ol>
</article>`
}

const subscribeForm = (slug: string) =>
  `<section class="card subscribe" id="subscribe" hidden>
<h2>Get e-mail notifications</h2>
<p class="muted">We will e-mail you when an incident is created, updated or resolved. You can unsubscribe at any time.</p>
<form id="subscribe-form" data-slug="${escapeHtml(slug)}">
<label for="subscribe-email">E-mail address</label>
<div class="field-row"><input id="subscribe-email" name="email" type="email" required autocomplete="email" placeholder="you@example.com">
<button type="submit" class="button">Subscribe</button></div>
<altcha-widget challenge="/api/v1/subscribe/challenge" name="altcha" auto="onfocus"></altcha-widget>
<p class="form-message" id="subscribe-message" role="status"></p>
</form>
</section>`

export const renderStatusPage = (model: StatusPageModel): string => {
  const overall = model.summary.overallStatus
  const active = model.activeIncidents.map(incidentCard).join("")
  const past = model.pastIncidents.length === 0
    ? `<p class="muted" data-no-past>No incidents reported.</p>`
    : model.pastIncidents.map(incidentCard).join("")
  return pageShell({
    title: `${model.orgName} Status`,
    head: `<link rel="alternate" type="application/rss+xml" title="${
      escapeHtml(model.orgName)
    } incidents" href="/api/v1/feed/${escapeHtml(model.slug)}">
<script type="module" src="/status-assets/altcha.js"></script>
<script type="application/json" id="status-labels">${
      // `<` escaped so no label can close the script element.
      JSON.stringify({ overall: overallText, rows: rowStatusText, incidents: statusLabel }).replace(
        /</g,
        "\\u003c"
      )}</script>
<script defer src="/status-assets/status.js"></script>`,
    body: `<header class="masthead"><div class="container masthead-inner">
<a class="brand" href="/status/${escapeHtml(model.slug)}"><span class="logo">${
      escapeHtml(model.orgName.slice(0, 1).toUpperCase())
    }</span>${escapeHtml(model.orgName)}</a>
<button class="button subscribe-toggle" type="button" aria-controls="subscribe">Subscribe to updates</button>
</div></header>
<main class="container" data-slug="${escapeHtml(model.slug)}">
${subscribeForm(model.slug)}
<section class="overall status-${overall}" id="overall" data-overall="${overall}">
<span class="overall-icon" aria-hidden="true"></span><h1 data-overall-text>${overallText[overall]}</h1>
<span class="live" id="live-indicator" title="Updates arrive live">Live</span>
</section>
<section id="active-incidents" class="incidents">${active}</section>
<section class="card">
<div class="card-head"><h2>System status</h2><span class="muted">Uptime over the past 90 days</span></div>
<ul class="rows">${
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
<div id="past-incidents">${past}</div>
</section>
</main>
<footer class="container footer"><a href="/api/v1/feed/${
      escapeHtml(model.slug)
    }">RSS feed</a><span>Powered by Canopy</span></footer>`
  })
}
