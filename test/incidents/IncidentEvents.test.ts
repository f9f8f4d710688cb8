import { expect, layer } from "@effect/vitest"
import { Context, Effect, Schema } from "effect"
import { IncidentEventData } from "../../schemas/incidents/Incidents.ts"
import { Incidents } from "../../services/incidents/Incidents.ts"
import { call, insertMonitor, newOrg, TestApp, TestAppLive } from "../status/fixtures.ts"

interface EventRow {
  readonly type: string
  readonly org_id: string
  readonly data: any
}

/** The incident events of one incident, in publication order. */
const eventsOf = (incidentId: string) =>
  Effect.gen(function*() {
    const { sql } = yield* TestApp
    return yield* sql<EventRow>`
      SELECT type, org_id, data FROM domain_events
      WHERE type LIKE 'incident.%' AND data->'incident'->>'id' = ${incidentId} ORDER BY id`
  })

const decodeEventData = Schema.decodeUnknownSync(IncidentEventData)

layer(TestAppLive, { excludeTestServices: true, timeout: "120 seconds" })("Incident events", (it) => {
  it.effect("every change publishes the incident as GET returns it and the new entry", () =>
    Effect.gen(function*() {
      const { key, orgId } = yield* newOrg("incev")
      const monitor = yield* insertMonitor(orgId)
      const get = (id: string) => Effect.map(call(`/api/v1/incidents/${id}`, { token: key }), (r) => r.body)

      const created = (yield* call("/api/v1/incidents", {
        method: "POST",
        token: key,
        body: { title: "Checkout down", severity: "major", affectedMonitors: [monitor] }
      })).body
      let events = yield* eventsOf(created.id)
      expect(events).toHaveLength(1)
      expect(events[0]).toMatchObject({ type: "incident.created", org_id: orgId })
      expect(events[0].data).toEqual({ incident: yield* get(created.id), update: created.updates[0] })
      // The payload is the exported contract.
      expect(decodeEventData(events[0].data).incident.affectedMonitors).toEqual([monitor])

      const identified = (yield* call(`/api/v1/incidents/${created.id}`, {
        method: "PATCH",
        token: key,
        body: { status: "identified", message: "Payment provider" }
      })).body
      events = yield* eventsOf(created.id)
      expect(events[1].type).toBe("incident.updated")
      expect(events[1].data).toEqual({ incident: identified, update: identified.updates.at(-1) })

      // An edit without a timeline entry: update is null.
      const renamed = (yield* call(`/api/v1/incidents/${created.id}`, {
        method: "PATCH",
        token: key,
        body: { title: "Checkout down (EU)" }
      })).body
      events = yield* eventsOf(created.id)
      expect(events[2]).toMatchObject({ type: "incident.updated", data: { incident: renamed, update: null } })

      const entry = (yield* call(`/api/v1/incidents/${created.id}/updates`, {
        method: "POST",
        token: key,
        body: { message: "Provider fixed it", status: "resolved" }
      })).body
      events = yield* eventsOf(created.id)
      expect(events[3].type).toBe("incident.resolved")
      expect(events[3].data).toEqual({ incident: yield* get(created.id), update: entry })
      expect(events[3].data.incident.resolvedAt).toBe(entry.createdAt)

      const posted = (yield* call(`/api/v1/incidents/${created.id}/updates`, {
        method: "POST",
        token: key,
        body: { message: "Post-mortem to follow" }
      })).body
      events = yield* eventsOf(created.id)
      // Still resolved: a plain update, not a second resolution.
      expect(events[4]).toMatchObject({ type: "incident.updated", data: { update: posted } })

      const before = yield* get(created.id)
      yield* call(`/api/v1/incidents/${created.id}`, { method: "DELETE", token: key })
      events = yield* eventsOf(created.id)
      expect(events.map((e) => e.type)).toEqual([
        "incident.created",
        "incident.updated",
        "incident.updated",
        "incident.resolved",
        "incident.updated",
        "incident.deleted"
      ])
      expect(events[5].data).toEqual({ incident: before, update: null })
    }))

  it.effect("refused changes and empty patches publish nothing", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg("incev")
      const created = (yield* call("/api/v1/incidents", { method: "POST", token: key, body: { title: "x" } })).body
      const refused = yield* call(`/api/v1/incidents/${created.id}`, {
        method: "PATCH",
        token: key,
        body: { status: "resolved" }
      })
      expect(refused.status).toBe(400)
      const empty = yield* call(`/api/v1/incidents/${created.id}`, { method: "PATCH", token: key, body: {} })
      expect(empty.status).toBe(200)
      expect(empty.body).toEqual(created)
      expect((yield* eventsOf(created.id)).map((e) => e.type)).toEqual(["incident.created"])
    }))

  it.effect("the event is written in the change's transaction: a rollback leaves neither", () =>
    Effect.gen(function*() {
      const { orgId } = yield* newOrg("incev")
      const { context, sql } = yield* TestApp
      const incidents = Context.get(context as Context.Context<Incidents>, Incidents)
      const count = (table: "incidents" | "domain_events") =>
        Effect.map(
          table === "incidents"
            ? sql<{ n: string }>`SELECT count(*) AS n FROM incidents WHERE org_id = ${orgId}`
            : sql<
              { n: string }
            >`SELECT count(*) AS n FROM domain_events WHERE org_id = ${orgId} AND type LIKE 'incident.%'`,
          (rows) => Number(rows[0].n)
        )

      // The caller's transaction fails after the incident was created: both roll back.
      const failed = yield* sql.withTransaction(
        Effect.andThen(incidents.create(orgId, { title: "Never happened" }), Effect.fail("abort" as const))
      ).pipe(Effect.flip)
      expect(failed).toBe("abort")
      expect(yield* count("incidents")).toBe(0)
      expect(yield* count("domain_events")).toBe(0)

      // The same call committed writes both.
      const kept = yield* sql.withTransaction(incidents.create(orgId, { title: "Happened" }))
      expect(yield* count("incidents")).toBe(1)
      expect((yield* eventsOf(kept.id)).map((e) => e.type)).toEqual(["incident.created"])
    }))
})
