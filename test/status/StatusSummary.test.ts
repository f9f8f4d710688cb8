import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { overallStatus } from "../../services/status/StatusSummary.ts"
import { bootstrapOrg, request, startApp } from "../support/app.ts"

describe("overall status", () => {
  it("follows GUIDE §6 over active monitors", () => {
    const counts = (operational: number, degraded: number, down: number) => ({
      total: operational + degraded + down,
      operational,
      degraded,
      down
    })
    expect(overallStatus(counts(0, 0, 0))).toBe("operational")
    expect(overallStatus(counts(3, 0, 0))).toBe("operational")
    expect(overallStatus(counts(2, 1, 0))).toBe("degraded")
    expect(overallStatus(counts(2, 1, 1))).toBe("partial_outage")
    expect(overallStatus(counts(0, 0, 2))).toBe("major_outage")
  })

  it.live("the public summary counts active monitors by status", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const { org } = yield* bootstrapOrg(app.baseUrl, { slug: "summary-org" })
      // Monitors as the scheduler would leave them, next checks far away so none runs now
      // (the schedule itself is tested with the monitoring suites).
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const rows = [["mon_up", "up", true], ["mon_deg", "degraded", true], ["mon_down", "down", true], [
          "mon_paused",
          "paused",
          false
        ]] as const
        for (const [id, status, active] of rows) {
          yield* sql`
            INSERT INTO monitors (id, org_id, name, url, status, active, next_check_at)
            VALUES (${id}, ${org.id}, ${id}, 'http://127.0.0.1:9/', ${status}, ${active}, now() + interval '1 hour')`
        }
      }).pipe(Effect.provideService(SqlClient.SqlClient, app.sql))
      const summary = yield* request(`${app.baseUrl}/api/v1/status/summary-org`)
      expect(summary.status).toBe(200)
      expect(summary.body).toMatchObject({
        overallStatus: "partial_outage",
        monitors: { total: 3, operational: 1, degraded: 1, down: 1 },
        activeIncidents: 0,
        components: []
      })
      expect(summary.body.uptime.day).toBeGreaterThanOrEqual(0)
      expect(summary.body.uptime.day).toBeLessThanOrEqual(100)
    }).pipe(Effect.scoped))
})
