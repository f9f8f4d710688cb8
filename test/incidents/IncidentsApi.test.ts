import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, expectInvalid, insertMonitor, newOrg, TestApp, TestAppLive } from "../status/fixtures.ts"

const isoMillis = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

const create = (token: string, body: Record<string, unknown>) =>
  Effect.map(call("/api/v1/incidents", { method: "POST", token, body }), (response) => {
    expect(response.status, JSON.stringify(response.body)).toBe(201)
    return response.body
  })

const get = (token: string, id: string) => call(`/api/v1/incidents/${id}`, { token })
const patch = (token: string, id: string, body: unknown) =>
  call(`/api/v1/incidents/${id}`, { method: "PATCH", token, body })
const postUpdate = (token: string, id: string, body: unknown) =>
  call(`/api/v1/incidents/${id}/updates`, { method: "POST", token, body })

layer(TestAppLive, { excludeTestServices: true, timeout: "120 seconds" })("Incidents API", (it) => {
  it.effect("state table: a new incident without status is investigating, minor, with a first entry", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg("inc")
      const created = yield* create(key, { title: "API errors" })
      expect(created).toMatchObject({
        title: "API errors",
        description: null,
        status: "investigating",
        severity: "minor",
        affectedMonitors: [],
        resolvedAt: null
      })
      expect(created.id).toMatch(/^inc_[A-Za-z0-9]+$/)
      expect(created.createdAt).toMatch(isoMillis)
      expect(created.updatedAt).toBe(created.createdAt)
      expect(created.updates).toEqual([{
        id: expect.stringMatching(/^upd_[A-Za-z0-9]+$/),
        status: "investigating",
        message: "API errors",
        createdAt: created.createdAt
      }])
      // GUIDE §6: the first entry is `message`, else the description, else the title.
      const described = yield* create(key, { title: "T", description: "Some requests fail" })
      expect(described.updates[0].message).toBe("Some requests fail")
      const messaged = yield* create(key, { title: "T", description: "D", message: "We are looking into it" })
      expect(messaged.updates[0].message).toBe("We are looking into it")
    }))

  it.effect("state table: each of the first three statuses is accepted at creation, resolved is not", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg("inc")
      for (const status of ["investigating", "identified", "monitoring"]) {
        const created = yield* create(key, { title: `Opened ${status}`, status, severity: "major" })
        expect(created.status).toBe(status)
        expect(created.severity).toBe("major")
        expect(created.updates).toHaveLength(1)
        expect(created.updates[0].status).toBe(status)
      }
      expectInvalid(
        yield* call("/api/v1/incidents", { method: "POST", token: key, body: { title: "x", status: "resolved" } }),
        "body.status"
      )
      const listed = yield* call("/api/v1/incidents", { token: key })
      expect(listed.body.count).toBe(3)
    }))

  it.effect("validates the create body", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg("inc")
      const post = (body: unknown) => call("/api/v1/incidents", { method: "POST", token: key, body })
      expectInvalid(yield* post({}), "body.title")
      expectInvalid(yield* post({ title: "" }), "body.title")
      expectInvalid(yield* post({ title: "   " }), "body.title")
      expectInvalid(yield* post({ title: "x".repeat(201) }), "body.title")
      expectInvalid(yield* post({ title: 42 }), "body.title")
      expectInvalid(yield* post({ title: "x", severity: "critical" }), "body.severity")
      expectInvalid(yield* post({ title: "x", status: "fixed" }), "body.status")
      expectInvalid(yield* post({ title: "x", affectedMonitors: "mon_1" }), "body.affectedMonitors")
      expectInvalid(yield* post({ title: "x", message: "" }), "body.message")
      expectInvalid(yield* post({ title: "x", message: "x".repeat(10_001) }), "body.message")
      expectInvalid(yield* post({ title: "x", description: "x".repeat(10_001) }), "body.description")
      expectInvalid(
        yield* post({ title: "x", affectedMonitors: Array.from({ length: 101 }, (_, i) => `mon_${i}`) }),
        "body.affectedMonitors"
      )
      expectInvalid(yield* post({ title: "x", affectedMonitors: [42] }), "body.affectedMonitors.0")
      expectInvalid(yield* post({ title: "x", unknownField: 1 }), "body.unknownField")
      const bad = yield* call("/api/v1/incidents", {
        method: "POST",
        token: key,
        body: "{not json",
        headers: { "content-type": "application/json" }
      })
      expect(bad.status).toBe(400)
      expect(bad.body.error).toBe("validation_error")
      // The longest title allowed is 200 characters.
      expect((yield* create(key, { title: "x".repeat(200) })).title).toHaveLength(200)
      // Nothing was stored by the refused requests.
      expect((yield* call("/api/v1/incidents", { token: key })).body.count).toBe(1)
    }))

  it.effect("affectedMonitors must be monitors of the same organization and are returned", () =>
    Effect.gen(function*() {
      const mine = yield* newOrg("inc")
      const other = yield* newOrg("inc")
      const a = yield* insertMonitor(mine.orgId)
      const b = yield* insertMonitor(mine.orgId, { active: false })
      const foreign = yield* insertMonitor(other.orgId)
      const created = yield* create(mine.key, { title: "Outage", affectedMonitors: [b, a, b] })
      expect(created.affectedMonitors).toEqual([b, a])
      expect((yield* get(mine.key, created.id)).body.affectedMonitors).toEqual([b, a])

      const refused = yield* call("/api/v1/incidents", {
        method: "POST",
        token: mine.key,
        body: { title: "x", affectedMonitors: [a, foreign, "mon_nope"] }
      })
      expectInvalid(refused, "body.affectedMonitors.1")
      expectInvalid(refused, "body.affectedMonitors.2")
      expect(refused.body.details.map((d: any) => d.path)).not.toContain("body.affectedMonitors.0")
      // PATCH replaces the list, under the same rule.
      expectInvalid(yield* patch(mine.key, created.id, { affectedMonitors: [foreign] }), "body.affectedMonitors.0")
      const replaced = yield* patch(mine.key, created.id, { affectedMonitors: [a] })
      expect(replaced.body.affectedMonitors).toEqual([a])
      expect((yield* call("/api/v1/incidents", { token: mine.key })).body.count).toBe(1)
    }))

  it.effect("lists newest first, filtered by status, limited, with the total count", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg("inc")
      const ids: Array<string> = []
      for (let i = 0; i < 4; i++) ids.push((yield* create(key, { title: `Incident ${i}` })).id)
      yield* patch(key, ids[1], { status: "identified", message: "Found it" })
      yield* patch(key, ids[2], { status: "resolved", message: "Fixed" })

      const all = yield* call("/api/v1/incidents", { token: key })
      expect(all.status).toBe(200)
      expect(all.body.count).toBe(4)
      expect(all.body.incidents.map((i: any) => i.id)).toEqual([...ids].reverse())
      expect(all.body.incidents[0].updates).toHaveLength(1)

      const limited = yield* call("/api/v1/incidents?limit=2", { token: key })
      expect(limited.body.incidents.map((i: any) => i.id)).toEqual([ids[3], ids[2]])
      expect(limited.body.count).toBe(4)

      const investigating = yield* call("/api/v1/incidents?status=investigating&limit=1", { token: key })
      expect(investigating.body.incidents.map((i: any) => i.id)).toEqual([ids[3]])
      expect(investigating.body.count).toBe(2)
      const resolved = yield* call("/api/v1/incidents?status=resolved", { token: key })
      expect(resolved.body).toMatchObject({ count: 1, incidents: [{ id: ids[2], status: "resolved" }] })
      expect((yield* call("/api/v1/incidents?status=monitoring", { token: key })).body).toEqual({
        incidents: [],
        count: 0
      })

      expectInvalid(yield* call("/api/v1/incidents?status=open", { token: key }), "query.status")
      expectInvalid(yield* call("/api/v1/incidents?limit=0", { token: key }), "query.limit")
      expectInvalid(yield* call("/api/v1/incidents?limit=101", { token: key }), "query.limit")
      expectInvalid(yield* call("/api/v1/incidents?limit=ten", { token: key }), "query.limit")
      expect((yield* call("/api/v1/incidents?limit=100", { token: key })).body.incidents).toHaveLength(4)
    }))

  it.effect("state table: PATCH with a status requires a message and adds an entry; resolved sets resolvedAt", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg("inc")
      const { id } = yield* create(key, { title: "Slow pages" })

      // A status change without a message is refused and changes nothing.
      expectInvalid(yield* patch(key, id, { status: "identified" }), "body.message")
      expect((yield* get(key, id)).body).toMatchObject({ status: "investigating", updates: [{}] })

      const identified = yield* patch(key, id, { status: "identified", message: "A slow query" })
      expect(identified.status).toBe(200)
      expect(identified.body.status).toBe("identified")
      expect(identified.body.updates.map((u: any) => [u.status, u.message])).toEqual([
        ["investigating", "Slow pages"],
        ["identified", "A slow query"]
      ])

      // A message without a status: a new entry with the current status.
      const noted = yield* patch(key, id, { message: "Still digging" })
      expect(noted.body.status).toBe("identified")
      expect(noted.body.updates.at(-1)).toMatchObject({ status: "identified", message: "Still digging" })

      // The same status again needs no message and adds nothing.
      const same = yield* patch(key, id, { status: "identified", title: "Slow pages (EU)" })
      expect(same.status).toBe(200)
      expect(same.body.title).toBe("Slow pages (EU)")
      expect(same.body.updates).toHaveLength(3)

      // Field edits alone add no entry.
      const edited = yield* patch(key, id, { severity: "major", description: "EU only" })
      expect(edited.body).toMatchObject({ severity: "major", description: "EU only", updates: expect.any(Array) })
      expect(edited.body.updates).toHaveLength(3)
      expect(edited.body.resolvedAt).toBeNull()
      const cleared = yield* patch(key, id, { description: null })
      expect(cleared.body.description).toBeNull()

      const resolved = yield* patch(key, id, { status: "resolved", message: "Fixed" })
      expect(resolved.body.status).toBe("resolved")
      expect(resolved.body.resolvedAt).toMatch(isoMillis)
      expect(resolved.body.updates.at(-1)).toMatchObject({ status: "resolved", message: "Fixed" })
      expect(resolved.body.resolvedAt).toBe(resolved.body.updates.at(-1).createdAt)

      // Leaving resolved clears resolvedAt.
      const reopened = yield* patch(key, id, { status: "monitoring", message: "It came back" })
      expect(reopened.body.status).toBe("monitoring")
      expect(reopened.body.resolvedAt).toBeNull()

      // GET returns the whole timeline, oldest first.
      const full = yield* get(key, id)
      expect(full.body.updates.map((u: any) => u.status)).toEqual([
        "investigating",
        "identified",
        "identified",
        "resolved",
        "monitoring"
      ])
      const times = full.body.updates.map((u: any) => Date.parse(u.createdAt))
      expect([...times].sort((x, y) => x - y)).toEqual(times)

      expectInvalid(yield* patch(key, id, { status: "done", message: "x" }), "body.status")
      expectInvalid(yield* patch(key, id, { title: "x".repeat(201) }), "body.title")
      expectInvalid(yield* patch(key, id, { message: "" }), "body.message")
      expect((yield* patch(key, "inc_missing", { title: "x" })).status).toBe(404)
    }))

  it.effect("state table: POST …/updates answers 201 with the entry; status defaults to the current one", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg("inc")
      const { id } = yield* create(key, { title: "Queue backlog", status: "identified" })

      const kept = yield* postUpdate(key, id, { message: "Draining the queue" })
      expect(kept.status).toBe(201)
      expect(kept.body).toEqual({
        id: expect.stringMatching(/^upd_/),
        status: "identified",
        message: "Draining the queue",
        createdAt: expect.stringMatching(isoMillis)
      })
      expect((yield* get(key, id)).body.status).toBe("identified")

      const moved = yield* postUpdate(key, id, { message: "Back to normal", status: "resolved" })
      expect(moved.status).toBe(201)
      expect(moved.body.status).toBe("resolved")
      const after = (yield* get(key, id)).body
      expect(after.status).toBe("resolved")
      expect(after.resolvedAt).toBe(moved.body.createdAt)
      expect(after.updatedAt).toBe(moved.body.createdAt)
      expect(after.updates.map((u: any) => u.id)).toEqual([after.updates[0].id, kept.body.id, moved.body.id])

      expectInvalid(yield* postUpdate(key, id, {}), "body.message")
      expectInvalid(yield* postUpdate(key, id, { message: "x", status: "closed" }), "body.status")
      expect((yield* postUpdate(key, "inc_missing", { message: "x" })).status).toBe(404)
    }))

  it.effect("DELETE answers 204 and removes the incident with its updates", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg("inc")
      const { id } = yield* create(key, { title: "Gone soon" })
      yield* postUpdate(key, id, { message: "more" })
      const removed = yield* call(`/api/v1/incidents/${id}`, { method: "DELETE", token: key })
      expect(removed.status).toBe(204)
      expect(removed.body).toBeUndefined()
      expect((yield* get(key, id)).status).toBe(404)
      const { sql } = yield* TestApp
      const rows = yield* sql<{ n: string }>`SELECT count(*) AS n FROM incident_updates WHERE incident_id = ${id}`
      expect(Number(rows[0].n)).toBe(0)
      expect((yield* call(`/api/v1/incidents/${id}`, { method: "DELETE", token: key })).status).toBe(404)
    }))

  it.effect("another organization's incident answers 404 everywhere; scopes are enforced", () =>
    Effect.gen(function*() {
      const owner = yield* newOrg("inc")
      const stranger = yield* newOrg("inc")
      const { id } = yield* create(owner.key, { title: "Private" })
      for (
        const response of [
          yield* get(stranger.key, id),
          yield* patch(stranger.key, id, { title: "Mine now" }),
          yield* postUpdate(stranger.key, id, { message: "hello" }),
          yield* call(`/api/v1/incidents/${id}`, { method: "DELETE", token: stranger.key })
        ]
      ) {
        expect(response.status).toBe(404)
        expect(response.body).toEqual({ error: "not_found", message: expect.any(String) })
      }
      expect((yield* call("/api/v1/incidents", { token: stranger.key })).body.count).toBe(0)
      expect((yield* get(owner.key, id)).body).toMatchObject({ title: "Private", updates: [{}] })

      expect((yield* call("/api/v1/incidents")).status).toBe(401)
      const reader = yield* newOrg("inc", ["incidents:read"])
      expect((yield* call("/api/v1/incidents", { token: reader.key })).status).toBe(200)
      const write = yield* call("/api/v1/incidents", { method: "POST", token: reader.key, body: { title: "x" } })
      expect(write.status).toBe(403)
      expect(write.body.error).toBe("forbidden")
      const monitorsOnly = yield* newOrg("inc", ["monitors:read", "monitors:write"])
      expect((yield* call("/api/v1/incidents", { token: monitorsOnly.key })).status).toBe(403)
    }))
})
