import type { Incident } from "../../../schemas/incidents/Incidents.ts"
import { escapeHtml } from "../html.ts"

/**
 * Incident markup of the public status page: cards with their severity, the components
 * (or monitors) they affect and their timeline; scheduled maintenance as upcoming or in
 * progress; and the history of the past 90 days grouped by day.
 */
export type PageIncident =
  & Pick<Incident, "id" | "title" | "status" | "severity" | "updates">
  & Partial<Pick<Incident, "affectedMonitors" | "createdAt" | "resolvedAt">>
  & { readonly scheduledFor?: string | null | undefined; readonly scheduledUntil?: string | null | undefined }

export const statusLabel: Record<string, string> = {
  investigating: "Investigating",
  identified: "Identified",
  monitoring: "Monitoring",
  resolved: "Resolved"
}

const severityLabel: Record<string, string> = { major: "Major", minor: "Minor", maintenance: "Maintenance" }

/** `2026-11-23 10:00 UTC`: readable, unambiguous, the same for every visitor. */
export const when = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`

/** A scheduled window's state at `now`. */
export const maintenanceState = (incident: PageIncident, now: number): "upcoming" | "in_progress" =>
  incident.scheduledFor != null && Date.parse(incident.scheduledFor) > now ? "upcoming" : "in_progress"

export const isScheduled = (incident: PageIncident) =>
  incident.severity === "maintenance" && incident.scheduledFor != null

/**
 * One card. `affects` names what the incident touches (component or monitor names, in
 * order, without repeats); `now` places a maintenance window (upcoming or in progress).
 */
export const incidentCard = (incident: PageIncident, affects: ReadonlyArray<string> = [], now?: number) => {
  const updates = [...incident.updates].reverse().map((update) =>
    `<li><strong>${escapeHtml(statusLabel[update.status] ?? update.status)}</strong> - ${
      escapeHtml(update.message)
    }<time datetime="${escapeHtml(update.createdAt)}">${when(update.createdAt)}</time></li>`
  ).join("")
  const scheduled = isScheduled(incident) && incident.status !== "resolved" && now !== undefined
  const state = scheduled ? maintenanceState(incident, now) : undefined
  const window = scheduled
    ? `<p class="window" data-scheduled-for="${escapeHtml(incident.scheduledFor!)}"${
      incident.scheduledUntil == null ? "" : ` data-scheduled-until="${escapeHtml(incident.scheduledUntil)}"`
    }><span class="maintenance-state" data-maintenance-state="${state}">${
      state === "upcoming" ? "Upcoming" : "In progress"
    }</span> ${when(incident.scheduledFor!)}${
      incident.scheduledUntil == null ? "" : ` – ${when(incident.scheduledUntil)}`
    }</p>`
    : ""
  const affected = affects.length === 0
    ? ""
    : `<p class="affects">Affects: <span data-affects>${affects.map(escapeHtml).join(", ")}</span></p>`
  return `<article class="incident severity-${escapeHtml(incident.severity)} status-${
    escapeHtml(incident.status)
  }" data-incident-id="${escapeHtml(incident.id)}">
<div class="incident-head"><h3>${escapeHtml(incident.title)}</h3><span class="severity severity-${
    escapeHtml(incident.severity)
  }" data-severity="${escapeHtml(incident.severity)}">${
    escapeHtml(severityLabel[incident.severity] ?? incident.severity)
  }</span></div>
${window}${affected}<ol class="timeline">${updates}</ol>
</article>`
}

/** Resolved incidents of the last `days` days, grouped by the UTC day they began, newest day first. */
export const incidentHistory = (
  incidents: ReadonlyArray<PageIncident>,
  affects: (incident: PageIncident) => ReadonlyArray<string>,
  now: number,
  days: number
) => {
  const since = new Date(now - (days - 1) * 86_400_000).toISOString().slice(0, 10)
  const byDay = new Map<string, Array<PageIncident>>()
  for (const incident of incidents) {
    const day = (incident.createdAt ?? incident.updates[0]?.createdAt ?? "").slice(0, 10)
    if (day < since) continue
    const list = byDay.get(day) ?? []
    list.push(incident)
    byDay.set(day, list)
  }
  if (byDay.size === 0) return `<p class="muted" data-no-past>No incidents reported in the past ${days} days.</p>`
  return [...byDay].sort(([a], [b]) => b.localeCompare(a)).map(([day, list]) =>
    `<section class="history-day" data-day="${day}"><h3 class="day">${
      new Date(`${day}T00:00:00.000Z`).toLocaleDateString("en-US", {
        timeZone: "UTC",
        year: "numeric",
        month: "long",
        day: "numeric"
      })
    }</h3>${list.map((incident) => incidentCard(incident, affects(incident))).join("")}</section>`
  ).join("")
}
