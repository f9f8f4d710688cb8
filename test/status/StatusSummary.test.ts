import { expect, layer } from "@effect/vitest"
import { Context, Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { accountInterval } from "../../services/monitors/Uptime.ts"
import { componentStatus, countMonitors, overallStatus, StatusSummary } from "../../services/status/StatusSummary.ts"
import { eventually } from "../support/wait.ts"
import { call, insertMonitor, newOrg, TestApp, TestAppLive } from "./fixtures.ts"

/** A local target: `/ok` answers 200 at once, `/slow` 200 after 400 ms, `/fail` 500. */
const startTarget = Effect.acquireRelease(
  Effect.callback<Http.Server>((resume) => {
    const server = Http.createServer((req, res) => {
      if (req.url === "/fail") res.writeHead(500).end("broken")
      else if (req.url === "/slow") setTimeout(() => res.end("ok"), 400)
      else res.end("ok")
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) =>
    Effect.callback<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
).pipe(Effect.map((server) => (path: string) => `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`))

const summaryOf = (slug: string) =>
  Effect.map(call(`/api/v1/status/${slug}`), (response) => {
    expect(response.status, JSON.stringify(response.body)).toBe(200)
    return response.body
  })

const openIncident = (key: string, severity: string, status = "investigating") =>
  Effect.map(
    call("/api/v1/incidents", {
      method: "POST",
      token: key,
      body: { title: `A ${severity} incident`, severity, status }
    }),
    (response) => response.body.id as string
  )

const createComponent = (key: string, name: string, monitorIds: ReadonlyArray<string>) =>
  Effect.map(
    call("/api/v1/components", { method: "POST", token: key, body: { name, monitorIds } }),
    (response) => response.body.id as string
  )

layer(TestAppLive, { excludeTestServices: true, timeout: "120 seconds" })("Status summary", (it) => {
  it.effect("rules of GUIDE §6 as functions", () =>
    Effect.sync(() => {
      const counts = countMonitors(["up", "pending", "degraded", "down"])
      expect(counts).toEqual({ total: 4, operational: 2, degraded: 1, down: 1 })
      expect(overallStatus(countMonitors([]))).toBe("operational")
      expect(overallStatus(countMonitors(["up"]), [{ severity: "maintenance" }])).toBe("operational")
      expect(overallStatus(countMonitors(["up"]), [{ severity: "minor" }])).toBe("degraded")
      expect(overallStatus(countMonitors(["up", "down"]), [{ severity: "minor" }])).toBe("partial_outage")
      expect(overallStatus(countMonitors(["up"]), [{ severity: "major" }])).toBe("major_outage")
      expect(overallStatus(countMonitors(["down", "down"]))).toBe("major_outage")
      expect(componentStatus([])).toBe("operational")
      expect(componentStatus(["up", "degraded"])).toBe("degraded")
      expect(componentStatus(["down", "degraded"])).toBe("partial_outage")
      expect(componentStatus(["down", "down"])).toBe("major_outage")
    }))

  it.effect("monitors checked against a real target give every component status", () =>
    Effect.gen(function*() {
      const url = yield* startTarget
      const { key, slug } = yield* newOrg("sum")
      const monitor = (name: string, path: string, extra: Record<string, unknown> = {}) =>
        Effect.map(
          call("/api/v1/monitors", {
            method: "POST",
            token: key,
            body: { name, url: url(path), retries: 0, ...extra }
          }),
          (response) => {
            expect(response.status, JSON.stringify(response.body)).toBe(201)
            return response.body.id as string
          }
        )
      const ok = yield* monitor("Homepage", "/ok")
      const slow = yield* monitor("Search", "/slow", { degradedThresholdMs: 100 })
      const fail = yield* monitor("Checkout", "/fail")
      const statuses = (ids: ReadonlyArray<string>) =>
        Effect.forEach(ids, (id) => Effect.map(call(`/api/v1/monitors/${id}`, { token: key }), (r) => r.body.status))
      // The scheduler checks new monitors at once; wait for the three results.
      yield* eventually(
        "first checks",
        statuses([ok, slow, fail]),
        (s) => s.join() === "up,degraded,down",
        { timeoutMs: 60_000, pollMs: 200 }
      )
      const fine = yield* createComponent(key, "Website", [ok])
      const degraded = yield* createComponent(key, "Search", [slow, ok])
      const partial = yield* createComponent(key, "Shop", [ok, fail])
      const major = yield* createComponent(key, "Payments", [fail])

      const summary = yield* summaryOf(slug)
      expect(summary).toMatchObject({
        overallStatus: "partial_outage",
        monitors: { total: 3, operational: 1, degraded: 1, down: 1 },
        activeIncidents: 0
      })
      expect(summary.components).toEqual([
        { id: fine, name: "Website", status: "operational", monitors: [{ id: ok, name: "Homepage", status: "up" }] },
        {
          id: degraded,
          name: "Search",
          status: "degraded",
          monitors: [{ id: slow, name: "Search", status: "degraded" }, { id: ok, name: "Homepage", status: "up" }]
        },
        {
          id: partial,
          name: "Shop",
          status: "partial_outage",
          monitors: [{ id: ok, name: "Homepage", status: "up" }, { id: fail, name: "Checkout", status: "down" }]
        },
        {
          id: major,
          name: "Payments",
          status: "major_outage",
          monitors: [{ id: fail, name: "Checkout", status: "down" }]
        }
      ])
      // Checkout has been down since its first check, so its uptime, and the average, are below 100.
      expect(summary.uptime.day).toBeLessThan(100)
    }))

  it.effect("each overall status from monitor rows and incidents", () =>
    Effect.gen(function*() {
      const scenario = (statuses: ReadonlyArray<string>, severities: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const { key, orgId, slug } = yield* newOrg("sum")
          for (const status of statuses) yield* insertMonitor(orgId, { status, active: status !== "paused" })
          for (const severity of severities) yield* openIncident(key, severity)
          return { key, slug, summary: yield* summaryOf(slug) }
        })
      const operational = yield* scenario(["up", "pending", "paused"], ["maintenance"])
      expect(operational.summary).toMatchObject({
        overallStatus: "operational",
        activeIncidents: 1,
        monitors: { total: 2, operational: 2, degraded: 0, down: 0 }
      })
      expect((yield* scenario(["up", "degraded"], [])).summary.overallStatus).toBe("degraded")
      expect((yield* scenario(["up"], ["minor"])).summary).toMatchObject({
        overallStatus: "degraded",
        activeIncidents: 1
      })
      expect((yield* scenario(["up", "down", "degraded"], ["minor"])).summary.overallStatus).toBe("partial_outage")
      expect((yield* scenario(["up", "up"], ["major", "minor"])).summary).toMatchObject({
        overallStatus: "major_outage",
        activeIncidents: 2
      })
      // Every active monitor down; the paused one does not count.
      expect((yield* scenario(["down", "down", "paused"], [])).summary.overallStatus).toBe("major_outage")
      expect((yield* scenario([], [])).summary).toMatchObject({ overallStatus: "operational", activeIncidents: 0 })

      // Resolving the major incident lifts the outage; the minor one still degrades. The summary
      // was read (and cached) before: each change reaches it through its event, within a second.
      const { key, slug } = yield* scenario(["up"], [])
      const majorId = yield* openIncident(key, "major")
      yield* openIncident(key, "minor")
      yield* eventually("the major outage", summaryOf(slug), (summary) => summary.overallStatus === "major_outage")
      yield* call(`/api/v1/incidents/${majorId}`, {
        method: "PATCH",
        token: key,
        body: { status: "resolved", message: "Fixed" }
      })
      const lifted = yield* eventually("the outage lifted", summaryOf(slug), (summary) => summary.activeIncidents === 1)
      expect(lifted).toMatchObject({ overallStatus: "degraded", activeIncidents: 1 })
    }))

  it.effect("uptime day, week and month come from the hourly rollups", () =>
    Effect.gen(function*() {
      const { orgId, slug } = yield* newOrg("sum")
      const id = yield* insertMonitor(orgId, { status: "up" })
      const { sql } = yield* TestApp
      const now = Date.now()
      const day = 86_400_000
      // Down for one hour three days ago, up since.
      yield* accountInterval(sql, {
        monitorId: id,
        from: new Date(now - 3 * day - 3_600_000),
        to: new Date(now - 3 * day),
        status: "down"
      })
      yield* accountInterval(sql, { monitorId: id, from: new Date(now - 3 * day), to: new Date(now), status: "up" })
      yield* sql`UPDATE monitors SET status_since = ${new Date(now).toISOString()}::timestamptz WHERE id = ${id}`
      const { uptime } = yield* summaryOf(slug)
      expect(uptime.day).toBe(100)
      expect(uptime.week).toBeCloseTo((72 / 73) * 100, 1)
      expect(uptime.month).toBeCloseTo((72 / 73) * 100, 1)
    }))

  it.effect("a monitor added or turning down shows at once, though uptime figures are reused for a few seconds", () =>
    Effect.gen(function*() {
      const { orgId, slug } = yield* newOrg("sum")
      // The service itself: rows are written here without the events the HTTP cache follows.
      const { context } = yield* TestApp
      const summaryOf = (slug: string) =>
        Context.get(context as Context.Context<StatusSummary>, StatusSummary).get(slug)
      yield* insertMonitor(orgId, { status: "up" })
      expect(yield* summaryOf(slug)).toMatchObject({ overallStatus: "operational", uptime: { month: 100 } })
      // A second monitor, down for the last two hours: a new set of monitors, so fresh figures.
      const { sql } = yield* TestApp
      const down = yield* insertMonitor(orgId, { status: "down" })
      yield* sql`UPDATE monitors SET status_since = now() - interval '2 hours' WHERE id = ${down}`
      const after = yield* summaryOf(slug)
      expect(after.overallStatus).toBe("partial_outage")
      expect(after.uptime.day).toBe(50)
    }))

  it.effect("the incidents a public page shows: every unresolved one and the latest resolved", () =>
    Effect.gen(function*() {
      const { key, orgId } = yield* newOrg("sum")
      const maintenance = yield* openIncident(key, "maintenance", "monitoring")
      const old = yield* openIncident(key, "minor")
      const major = yield* openIncident(key, "major", "identified")
      yield* call(`/api/v1/incidents/${old}`, {
        method: "PATCH",
        token: key,
        body: { status: "resolved", message: "ok" }
      })
      const { context } = yield* TestApp
      const summary = Context.get(context as Context.Context<StatusSummary>, StatusSummary)
      const shown = yield* summary.incidents(orgId)
      expect(shown.active.map((i) => i.id)).toEqual([major, maintenance])
      expect(shown.past.map((i) => [i.id, i.updates.length])).toEqual([[old, 2]])
      expect((yield* summary.incidents(orgId, 0)).past).toHaveLength(1)
    }))

  it.effect("an unknown slug is a 404", () =>
    Effect.gen(function*() {
      const response = yield* call("/api/v1/status/no-such-org")
      expect(response.status).toBe(404)
      expect(response.body.error).toBe("not_found")
      expect((yield* call("/api/v1/status/Bad_Slug")).status).toBe(400)
    }))
})
