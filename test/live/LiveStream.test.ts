import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { LiveMessage } from "../../schemas/live/Live.ts"
import { publish } from "../../services/events/Events.ts"
import { LiveHub } from "../../services/live/LiveHub.ts"
import { freePort } from "../../services/platform/EmbeddedPostgres.ts"
import { bootstrapOrg, request, startApp, startAppOnDatabase } from "../support/app.ts"
import { createTestDatabase } from "../support/database.ts"
import { tempDir } from "../support/tempDir.ts"
import { eventually } from "../support/wait.ts"
import { connectLive, liveUrl, refusedStatus } from "./client.ts"
import { createIncident } from "./incidents.ts"

/** An `incident.*` event as the incidents service publishes it (`IncidentEventData`). */
const incidentEvent = (orgId: string, type: string, id: string, extra: Record<string, unknown> = {}) => {
  const now = new Date().toISOString()
  const update = { id: `upd_${id}`, status: "investigating", message: "We are looking into it", createdAt: now }
  return {
    type,
    orgId,
    data: {
      incident: {
        id,
        title: "Elevated error rates",
        description: null,
        status: "investigating",
        severity: "minor",
        affectedMonitors: [],
        createdAt: now,
        updatedAt: now,
        resolvedAt: null,
        updates: [update],
        ...extra
      },
      update
    }
  }
}

const publishWith = (sql: SqlClient.SqlClient, event: Parameters<typeof publish>[0]) =>
  publish(event).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie)

const failingTarget = Effect.acquireRelease(
  Effect.callback<Http.Server>((resume) => {
    const server = Http.createServer((_req, res) => {
      res.statusCode = 500
      res.end()
    })
    server.listen(0, "127.0.0.1", () => {
      resume(Effect.succeed(server))
    })
  }),
  (server) =>
    Effect.callback<void>((resume) => {
      server.close(() => resume(Effect.void))
    })
).pipe(Effect.map((server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/`))

describe("live status stream", () => {
  it.live("a public client gets the snapshot, then incident, status and monitor events", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const { key } = yield* bootstrapOrg(app.baseUrl, { slug: "live-org" })
      const client = yield* connectLive(liveUrl(app.baseUrl, "/api/v1/live/live-org"))

      const [snapshot] = yield* eventually("snapshot", Effect.succeed(client.messages), (m) => m.length >= 1)
      expect(snapshot.type).toBe("snapshot")
      expect(snapshot.data.overallStatus).toBe("operational")
      expect(Schema.is(LiveMessage)(snapshot)).toBe(true)

      const created = yield* createIncident(app.baseUrl, key, { title: "Elevated error rates", severity: "major" })
      const incident = yield* eventually(
        "incident.created",
        Effect.sync(() => client.messages.find((m) => m.type === "incident.created")),
        (m) => m !== undefined
      )
      expect(incident!.data.incident).toEqual(created)
      expect(incident!.data.update).toEqual(created.updates[0])
      expect(incident!.at).toMatch(/^\d{4}-\d{2}-\d{2}T.*Z$/)
      // The summary changed (an unresolved major incident): a `status` message carries it.
      const afterIncident = yield* eventually(
        "status after the incident",
        Effect.sync(() => client.messages.find((m) => m.type === "status")),
        (m) => m !== undefined
      )
      expect(afterIncident!.data).toMatchObject({ overallStatus: "major_outage", activeIncidents: 1 })

      // A real monitor.status event: a monitor failing against a local target goes down.
      const url = yield* failingTarget
      const monitor = yield* request(`${app.baseUrl}/api/v1/monitors`, {
        token: key,
        method: "POST",
        body: { name: "Edge", url, retries: 0 }
      })
      expect(monitor.status).toBe(201)
      const down = yield* eventually(
        "monitor.status down",
        Effect.sync(() => client.messages.find((m) => m.type === "monitor.status")),
        (m) => m !== undefined,
        { timeoutMs: 60_000 }
      )
      expect(down!.data).toMatchObject({ monitorId: monitor.body.id, status: "down", previousStatus: "pending" })
      const status = yield* eventually(
        "status with the monitor down",
        Effect.sync(() => client.messages.filter((m) => m.type === "status").at(-1)),
        (m) => m?.data.monitors.down === 1
      )
      expect(status!.data).toMatchObject({ overallStatus: "major_outage", activeIncidents: 1 })
      // Public clients never see heartbeats.
      expect(client.messages.some((m) => m.type === "heartbeat")).toBe(false)
      // A new component changes the summary too.
      const component = yield* request(`${app.baseUrl}/api/v1/components`, {
        token: key,
        method: "POST",
        body: { name: "Edge network", monitorIds: [monitor.body.id] }
      })
      expect(component.status).toBe(201)
      const withComponent = yield* eventually(
        "status with the component",
        Effect.sync(() => client.messages.filter((m) => m.type === "status").at(-1)),
        (m) => m?.data.components.length === 1
      )
      expect(withComponent!.data.components[0]).toMatchObject({ id: component.body.id, status: "major_outage" })
      for (const message of client.messages) expect(Schema.is(LiveMessage)(message)).toBe(true)
    }).pipe(Effect.scoped), 90_000)

  it.live("refuses unknown pages, missing keys and plain HTTP", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const { key } = yield* bootstrapOrg(app.baseUrl, { slug: "live-refuse", scopes: ["monitors:read"] })
      expect(yield* refusedStatus(liveUrl(app.baseUrl, "/api/v1/live/nobody-here"))).toBe("HTTP 404")
      expect(yield* refusedStatus(liveUrl(app.baseUrl, "/api/v1/live"))).toBe("HTTP 401")
      expect(yield* refusedStatus(liveUrl(app.baseUrl, "/api/v1/live?access_token=cnp_nope"))).toBe("HTTP 401")
      expect(yield* refusedStatus(liveUrl(app.baseUrl, `/api/v1/live?access_token=${key}`))).toBe("HTTP 403")
      expect(yield* refusedStatus(liveUrl(app.baseUrl, "/api/v1/live/%E0%A4%A"))).toBe("HTTP 404")
      // A client sending an oversized frame is closed (1009); the server keeps serving.
      const chatty = yield* connectLive(liveUrl(app.baseUrl, "/api/v1/live/live-refuse"))
      chatty.ws.send("x".repeat(10_000))
      yield* eventually(
        "the oversized frame refused",
        Effect.sync(() => chatty.closed.code),
        (code) => code !== undefined
      )
      expect(chatty.closed.code).toBe(1009)
      const after = yield* connectLive(liveUrl(app.baseUrl, "/api/v1/live/live-refuse"))
      yield* eventually("a snapshot after that", Effect.succeed(after.messages), (m) => m[0]?.type === "snapshot")
      const plain = yield* request(`${app.baseUrl}/api/v1/live/live-refuse`)
      expect(plain.status).toBe(400)
      expect(plain.body.error).toBe("validation_error")
    }).pipe(Effect.scoped))

  it.live("the authenticated channel adds heartbeats, by header or access_token", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const { key, org } = yield* bootstrapOrg(app.baseUrl, { slug: "live-private" })
      const byQuery = yield* connectLive(liveUrl(app.baseUrl, `/api/v1/live?access_token=${key}`))
      const byHeader = yield* connectLive(liveUrl(app.baseUrl, "/api/v1/live"), { authorization: `Bearer ${key}` })
      const publicClient = yield* connectLive(liveUrl(app.baseUrl, "/api/v1/live/live-private"))
      for (const client of [byQuery, byHeader, publicClient]) {
        yield* eventually("snapshot", Effect.succeed(client.messages), (m) => m[0]?.type === "snapshot")
      }
      yield* publishWith(app.sql, {
        type: "heartbeat",
        orgId: org.id,
        data: { monitorId: "mon_x", status: "up", responseTime: 12 }
      })
      yield* publishWith(app.sql, incidentEvent(org.id, "incident.created", "inc_after_beat"))
      for (const client of [byQuery, byHeader]) {
        const beat = yield* eventually(
          "heartbeat",
          Effect.sync(() => client.messages.find((m) => m.type === "heartbeat")),
          (m) => m !== undefined
        )
        expect(beat!.data.responseTime).toBe(12)
      }
      yield* eventually("incident on the public channel", Effect.succeed(publicClient.messages), (m) =>
        m.some((message) =>
          message.type === "incident.created"
        ))
      expect(publicClient.messages.some((m) => m.type === "heartbeat")).toBe(false)
    }).pipe(Effect.scoped))

  it.live("a client connected to runner B sees an event caused through runner A", () =>
    Effect.gen(function*() {
      const databaseUrl = yield* createTestDatabase
      // Runners of one deployment share the master key (here: the data folder holding it).
      const dataDir = yield* tempDir("canopy-live-")
      const runner = (port: number) => ({
        runnerAddress: Option.some({ host: "127.0.0.1", port }),
        runnerListenAddress: Option.none(),
        dataDir
      })
      const a = yield* startAppOnDatabase(databaseUrl, runner(yield* Effect.promise(freePort)))
      const b = yield* startAppOnDatabase(databaseUrl, runner(yield* Effect.promise(freePort)))
      const { key } = yield* bootstrapOrg(a.baseUrl, { slug: "two-runners" })
      const onB = yield* connectLive(liveUrl(b.baseUrl, "/api/v1/live/two-runners"))
      yield* eventually("snapshot on B", Effect.succeed(onB.messages), (m) => m[0]?.type === "snapshot")
      const created = yield* createIncident(a.baseUrl, key, { title: "Caused through runner A" })
      const seen = yield* eventually(
        "the event on B",
        Effect.sync(() => onB.messages.find((m) => m.type === "incident.created")),
        (m) => m !== undefined
      )
      expect(seen!.data.incident.id).toBe(created.id)
      // Stopping runner B closes its clients with 1012 "service restart" (they reconnect to
      // another runner) before the HTTP server shuts down, instead of holding it up.
      yield* b.stop
      yield* eventually("B's client closed", Effect.sync(() => onB.closed.code), (code) => code !== undefined)
      expect(onB.closed.code).toBe(1012)
    }).pipe(Effect.scoped), 90_000)

  it.live("a client that stops reading is dropped while the others keep receiving", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const { org } = yield* bootstrapOrg(app.baseUrl, { slug: "live-slow" })
      const hub = Context.get(app.context, LiveHub)
      const url = liveUrl(app.baseUrl, "/api/v1/live/live-slow")
      const fast = yield* connectLive(url)
      const slow = yield* connectLive(url)
      for (const client of [fast, slow]) {
        yield* eventually("snapshot", Effect.succeed(client.messages), (m) => m[0]?.type === "snapshot")
      }
      expect(yield* hub.connections).toBe(2) // The slow client stops reading from its socket: its data piles up in the kernel and
       // then in the server's send buffer, until that passes its bound.
      ;(slow.ws as unknown as { _socket: { pause(): void } })._socket.pause()

      const padding = "x".repeat(256 * 1024)
      let sent = 0
      while ((yield* hub.connections) === 2 && sent < 400) {
        sent++
        yield* publishWith(app.sql, incidentEvent(org.id, "incident.updated", `inc_big_${sent}`, { padding }))
        yield* eventually(
          `event ${sent} at the fast client`,
          Effect.sync(() => fast.messages.filter((m) => m.type === "incident.updated").length),
          (count) => count >= sent
        )
      }
      expect(yield* hub.connections).toBe(1)
      // The fast client got every event; the slow one was cut off after far fewer.
      expect(fast.messages.filter((m) => m.type === "incident.updated")).toHaveLength(sent)
      ;(slow.ws as unknown as { _socket: { resume(): void } })._socket.resume()
      yield* eventually(
        "the slow client sees its connection gone",
        Effect.sync(() => slow.closed.code),
        (code) => code !== undefined
      )
      expect(slow.messages.filter((m) => m.type === "incident.updated").length).toBeLessThan(sent)
    }).pipe(Effect.scoped), 120_000)
})
