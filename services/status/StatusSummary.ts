import { Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { Incident, IncidentSeverity } from "../../schemas/incidents/Incidents.ts"
import { NotFound } from "../../schemas/platform/Errors.ts"
import type { OverallStatus, StatusSummary as Summary, Widget } from "../../schemas/status/Status.ts"
import { type ActiveIncident, Incidents } from "../incidents/Incidents.ts"
import { MonitorRepository } from "../monitors/MonitorRepository.ts"
import type { MonitorHealth } from "../monitors/MonitorRepository.ts"
import { roundUptime } from "../monitors/Monitors.ts"
import { Uptime, type UptimeWindow } from "../monitors/Uptime.ts"
import { type OrganizationName, organizationNameBySlug } from "../tenancy/Tenancy.ts"
import { Components } from "./Components.ts"

export interface MonitorStatusCounts {
  readonly total: number
  readonly operational: number
  readonly degraded: number
  readonly down: number
}

/**
 * GUIDE §6: `major_outage` if an unresolved `major` incident exists or every active monitor
 * is down; `partial_outage` if any monitor is down; `degraded` if any monitor is degraded or
 * an unresolved `minor` incident exists; else `operational`. Maintenance does not lower it.
 */
export const overallStatus = (
  counts: MonitorStatusCounts,
  unresolved: ReadonlyArray<{ readonly severity: IncidentSeverity }> = []
): OverallStatus =>
  unresolved.some((incident) => incident.severity === "major") || (counts.total > 0 && counts.down === counts.total)
    ? "major_outage"
    : counts.down > 0
    ? "partial_outage"
    : counts.degraded > 0 || unresolved.some((incident) => incident.severity === "minor")
    ? "degraded"
    : "operational"

/**
 * GUIDE §6 over a component's active monitors: all down is `major_outage`, some down
 * `partial_outage`, any degraded `degraded`, else (also with no monitor) `operational`.
 */
export const componentStatus = (statuses: ReadonlyArray<string>): OverallStatus => {
  const down = statuses.filter((status) => status === "down").length
  return statuses.length > 0 && down === statuses.length
    ? "major_outage"
    : down > 0
    ? "partial_outage"
    : statuses.includes("degraded")
    ? "degraded"
    : "operational"
}

/** A pending monitor (no check yet) counts as operational. */
export const countMonitors = (statuses: ReadonlyArray<string>): MonitorStatusCounts => ({
  total: statuses.length,
  operational: statuses.filter((status) => status === "up" || status === "pending").length,
  degraded: statuses.filter((status) => status === "degraded").length,
  down: statuses.filter((status) => status === "down").length
})

const average = (values: ReadonlyArray<number>) =>
  values.length === 0 ? 100 : values.reduce((sum, value) => sum + value, 0) / values.length

/** What a public page shows about one monitor: its name and uptime, `null` without data. */
export interface PublicMonitorUptime {
  readonly id: string
  readonly name: string
  readonly uptime: number | null
}

/** The incidents a public status page shows, each with its timeline, newest first. */
export interface PublicIncidents {
  /** Every unresolved incident (maintenance included). */
  readonly active: ReadonlyArray<Incident>
  /** The most recent resolved ones. */
  readonly past: ReadonlyArray<Incident>
}

type Figures = ReadonlyArray<Record<UptimeWindow, number>>

/** How long a summary's uptime figures are reused, and for how many organizations at most. */
const UPTIME_MEMO_MS = 5_000
const UPTIME_MEMO_ORGS = 10_000

/**
 * The single source of public status: the summary (overall and component status, uptime,
 * active incidents), the widget, and the uptime a badge shows. Paused monitors are left out
 * of everything but badges.
 */
export class StatusSummary extends Context.Service<StatusSummary, {
  /** The organization behind a public slug. */
  organization(slug: string): Effect.Effect<OrganizationName, NotFound>
  get(slug: string): Effect.Effect<Summary, NotFound>
  forOrganization(orgId: string): Effect.Effect<Summary>
  widget(slug: string): Effect.Effect<Widget, NotFound>
  /** Active incidents and the `pastLimit` (1–100, default 20) latest resolved ones. */
  incidents(orgId: string, pastLimit?: number): Effect.Effect<PublicIncidents>
  /** A monitor of the organization (active or paused) and its uptime over `window`. */
  monitorUptime(slug: string, monitorId: string, window: UptimeWindow): Effect.Effect<PublicMonitorUptime, NotFound>
}>()("canopy/status/StatusSummary") {
  static readonly layer = Layer.effect(
    StatusSummary,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const monitorRepository = yield* MonitorRepository
      const uptime = yield* Uptime
      const incidents = yield* Incidents
      const components = yield* Components

      const organization = Effect.fn("StatusSummary.organization")(function*(slug: string) {
        const org = yield* organizationNameBySlug(sql, slug).pipe(Effect.orDie)
        if (Option.isNone(org)) return yield* new NotFound({ message: `No status page for '${slug}'` })
        return org.value
      })

      /**
       * The organization's per-monitor uptime, remembered for a few seconds: it reads a month of
       * rollups (most of a summary's cost), and a figure over 24 h to 30 d does not move in that
       * time. Statuses, components and incidents are always read fresh.
       */
      const uptimeMemo = new Map<string, { readonly key: string; readonly at: number; readonly figures: Figures }>()
      const orgUptime = (orgId: string, monitorIds: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const key = monitorIds.join(",")
          const memo = uptimeMemo.get(orgId)
          if (memo !== undefined && memo.key === key && now - memo.at < UPTIME_MEMO_MS) return memo.figures
          const figures = [...(yield* uptime.uptime(monitorIds, ["24h", "7d", "30d"])).values()]
          if (uptimeMemo.size >= UPTIME_MEMO_ORGS) uptimeMemo.delete(uptimeMemo.keys().next().value!)
          uptimeMemo.delete(orgId)
          uptimeMemo.set(orgId, { key, at: now, figures })
          return figures
        })

      const activeMonitors = (orgId: string) => monitorRepository.healthOfOrg(orgId).pipe(Effect.orDie)

      const summarize = (
        monitors: ReadonlyArray<MonitorHealth>,
        unresolved: ReadonlyArray<ActiveIncident>,
        orgId: string
      ) =>
        Effect.gen(function*() {
          const counts = countMonitors(monitors.map((m) => m.status))
          const figures = yield* orgUptime(orgId, monitors.map((m) => m.id))
          const byId = new Map(monitors.map((m) => [m.id, m]))
          const { components: defined } = yield* components.list(orgId)
          return {
            overallStatus: overallStatus(counts, unresolved),
            monitors: counts,
            activeIncidents: unresolved.length,
            uptime: {
              day: roundUptime(average(figures.map((f) => f["24h"]))),
              week: roundUptime(average(figures.map((f) => f["7d"]))),
              month: roundUptime(average(figures.map((f) => f["30d"])))
            },
            components: defined.map((component) => {
              const members = component.monitorIds.flatMap((id) => {
                const monitor = byId.get(id)
                return monitor === undefined ? [] : [{ id: monitor.id, name: monitor.name, status: monitor.status }]
              })
              return {
                id: component.id,
                name: component.name,
                status: componentStatus(members.map((m) => m.status)),
                monitors: members
              }
            })
          } satisfies Summary
        })

      const forOrganization = Effect.fn("StatusSummary.forOrganization")(function*(orgId: string) {
        const [monitors, unresolved] = yield* Effect.all([activeMonitors(orgId), incidents.active(orgId)])
        return yield* summarize(monitors, unresolved, orgId)
      })

      const get = Effect.fn("StatusSummary.get")(function*(slug: string) {
        return yield* forOrganization((yield* organization(slug)).id)
      })

      const widget = Effect.fn("StatusSummary.widget")(function*(slug: string) {
        const org = yield* organization(slug)
        const [monitors, unresolved, incidentChange] = yield* Effect.all([
          activeMonitors(org.id),
          incidents.active(org.id),
          incidents.lastChangedAt(org.id)
        ])
        const summary = yield* summarize(monitors, unresolved, org.id)
        // The newest heartbeat is each monitor's last check; with no data at all, now.
        const times = [
          ...monitors.flatMap((m) => m.lastCheckedAt === null ? [] : [m.lastCheckedAt.getTime()]),
          ...(incidentChange === undefined ? [] : [incidentChange.getTime()])
        ]
        const lastUpdated = times.length > 0 ? Math.max(...times) : yield* Clock.currentTimeMillis
        return {
          status: summary.overallStatus,
          uptime: summary.uptime.month,
          monitors: summary.monitors.total,
          incidents: summary.activeIncidents,
          lastUpdated: new Date(lastUpdated).toISOString()
        } satisfies Widget
      })

      const monitorUptime = Effect.fn("StatusSummary.monitorUptime")(
        function*(slug: string, monitorId: string, window: UptimeWindow) {
          const org = yield* organization(slug)
          const monitor = yield* monitorRepository.find(monitorId, { orgId: org.id }).pipe(Effect.orDie)
          if (Option.isNone(monitor)) return yield* new NotFound({ message: `Monitor '${monitorId}' not found` })
          const totals = (yield* uptime.totals([monitorId], [window])).get(monitorId)?.[window]
          const measured = totals !== undefined && totals.upMs + totals.downMs > 0
          return {
            id: monitor.value.id,
            name: monitor.value.name,
            uptime: measured ? roundUptime((totals.upMs / (totals.upMs + totals.downMs)) * 100) : null
          }
        }
      )

      const publicIncidents = Effect.fn("StatusSummary.incidents")(function*(orgId: string, pastLimit = 20) {
        const [active, past] = yield* Effect.all([
          incidents.list(orgId, { unresolved: true, limit: 100 }),
          incidents.list(orgId, { status: "resolved", limit: pastLimit })
        ])
        return { active: active.incidents, past: past.incidents }
      })

      return StatusSummary.of({
        organization,
        get,
        forOrganization,
        widget,
        incidents: publicIncidents,
        monitorUptime
      })
    })
  ).pipe(Layer.provide(MonitorRepository.layer))
}
