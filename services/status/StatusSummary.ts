import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { NotFound } from "../../schemas/Errors.ts"
import type { OverallStatus, StatusSummary as Summary } from "../../schemas/Status.ts"
import { roundUptime } from "../monitoring/Monitors.ts"
import { Uptime } from "../monitoring/Uptime.ts"

export interface MonitorStatusCounts {
  readonly total: number
  readonly operational: number
  readonly degraded: number
  readonly down: number
}

/**
 * GUIDE §6 over active monitors: all down is a major outage, some down a partial one, any
 * degraded is degraded. (Incidents join this rule once incidents exist.)
 */
export const overallStatus = (counts: MonitorStatusCounts): OverallStatus =>
  counts.total > 0 && counts.down === counts.total
    ? "major_outage"
    : counts.down > 0
    ? "partial_outage"
    : counts.degraded > 0
    ? "degraded"
    : "operational"

const average = (values: ReadonlyArray<number>) =>
  values.length === 0 ? 100 : values.reduce((sum, value) => sum + value, 0) / values.length

/** The public status summary of an organization, by slug; paused monitors are left out. */
export class StatusSummary extends Context.Service<StatusSummary, {
  get(slug: string): Effect.Effect<Summary, NotFound>
}>()("canopy/status/StatusSummary") {
  static readonly layer = Layer.effect(
    StatusSummary,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const uptime = yield* Uptime
      const get = Effect.fn("StatusSummary.get")(function*(slug: string) {
        const orgs = yield* sql<{ id: string }>`SELECT id FROM organizations WHERE slug = ${slug}`.pipe(Effect.orDie)
        if (orgs.length === 0) return yield* new NotFound({ message: `No status page for '${slug}'` })
        const monitors = yield* sql<{ id: string; status: string }>`
          SELECT id, status FROM monitors WHERE org_id = ${orgs[0].id} AND active`.pipe(Effect.orDie)
        const counts = {
          total: monitors.length,
          operational: monitors.filter((m) => m.status === "up" || m.status === "pending").length,
          degraded: monitors.filter((m) => m.status === "degraded").length,
          down: monitors.filter((m) => m.status === "down").length
        }
        const figures = [...(yield* uptime.uptime(monitors.map((m) => m.id), ["24h", "7d", "30d"])).values()]
        return {
          overallStatus: overallStatus(counts),
          monitors: counts,
          activeIncidents: 0,
          uptime: {
            day: roundUptime(average(figures.map((f) => f["24h"]))),
            week: roundUptime(average(figures.map((f) => f["7d"]))),
            month: roundUptime(average(figures.map((f) => f["30d"])))
          },
          components: []
        }
      })
      return StatusSummary.of({ get })
    })
  )
}
