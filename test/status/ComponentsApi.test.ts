import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, expectInvalid, insertMonitor, newOrg, TestApp, TestAppLive } from "./fixtures.ts"

const create = (token: string, body: Record<string, unknown>) =>
  Effect.map(call("/api/v1/components", { method: "POST", token, body }), (response) => {
    expect(response.status, JSON.stringify(response.body)).toBe(201)
    return response.body
  })

layer(TestAppLive, { excludeTestServices: true, timeout: "120 seconds" })("Components API", (it) => {
  it.effect("creates, lists in position order, reads, updates and deletes components", () =>
    Effect.gen(function*() {
      const { key, orgId } = yield* newOrg("cmp")
      const a = yield* insertMonitor(orgId)
      const b = yield* insertMonitor(orgId)

      const api = yield* create(key, { name: "API", monitorIds: [a, b, a] })
      expect(api).toEqual({
        id: expect.stringMatching(/^cmp_[A-Za-z0-9]+$/),
        name: "API",
        description: null,
        monitorIds: [a, b],
        position: 0,
        createdAt: expect.stringMatching(/Z$/),
        updatedAt: api.createdAt
      })
      const web = yield* create(key, { name: "Website", description: "Marketing site" })
      expect(web).toMatchObject({ position: 1, monitorIds: [], description: "Marketing site" })
      const first = yield* create(key, { name: "Login", position: 0 })

      const listed = yield* call("/api/v1/components", { token: key })
      expect(listed.status).toBe(200)
      expect(listed.body.count).toBe(3)
      // By position, then creation.
      expect(listed.body.components.map((c: any) => c.name)).toEqual(["API", "Login", "Website"])

      expect((yield* call(`/api/v1/components/${web.id}`, { token: key })).body).toEqual(web)

      const moved = yield* call(`/api/v1/components/${first.id}`, {
        method: "PATCH",
        token: key,
        body: { name: "Sign-in", position: 5, monitorIds: [b] }
      })
      expect(moved.status).toBe(200)
      expect(moved.body).toMatchObject({ name: "Sign-in", position: 5, monitorIds: [b], description: null })
      const cleared = yield* call(`/api/v1/components/${web.id}`, {
        method: "PATCH",
        token: key,
        body: { description: null }
      })
      expect(cleared.body).toMatchObject({ name: "Website", description: null })
      expect((yield* call("/api/v1/components", { token: key })).body.components.map((c: any) => c.name)).toEqual([
        "API",
        "Website",
        "Sign-in"
      ])

      const removed = yield* call(`/api/v1/components/${api.id}`, { method: "DELETE", token: key })
      expect(removed.status).toBe(204)
      expect(removed.body).toBeUndefined()
      expect((yield* call(`/api/v1/components/${api.id}`, { token: key })).status).toBe(404)
      expect((yield* call("/api/v1/components", { token: key })).body.count).toBe(2)

      // Each change is announced in its transaction (live views refresh the summary); an empty PATCH is none.
      expect((yield* call(`/api/v1/components/${web.id}`, { method: "PATCH", token: key, body: {} })).body).toEqual(
        cleared.body
      )
      const { sql } = yield* TestApp
      const events = yield* sql<{ data: any }>`
        SELECT data FROM domain_events WHERE type = 'component.changed' AND org_id = ${orgId} ORDER BY id`
      expect(events.map((e) => [e.data.componentId, e.data.change])).toEqual([
        [api.id, "created"],
        [web.id, "created"],
        [first.id, "created"],
        [first.id, "updated"],
        [web.id, "updated"],
        [api.id, "deleted"]
      ])
    }))

  it.effect("validates bodies; monitorIds must be monitors of the same organization", () =>
    Effect.gen(function*() {
      const { key, orgId } = yield* newOrg("cmp")
      const other = yield* newOrg("cmp")
      const mine = yield* insertMonitor(orgId)
      const foreign = yield* insertMonitor(other.orgId)
      const post = (body: unknown) => call("/api/v1/components", { method: "POST", token: key, body })
      expectInvalid(yield* post({}), "body.name")
      expectInvalid(yield* post({ name: " " }), "body.name")
      expectInvalid(yield* post({ name: "x".repeat(101) }), "body.name")
      expectInvalid(yield* post({ name: "x", description: "x".repeat(1001) }), "body.description")
      expectInvalid(
        yield* post({ name: "x", monitorIds: Array.from({ length: 101 }, (_, i) => `mon_${i}`) }),
        "body.monitorIds"
      )
      expectInvalid(yield* post({ name: "x", position: -1 }), "body.position")
      expectInvalid(yield* post({ name: "x", position: 1.5 }), "body.position")
      expectInvalid(yield* post({ name: "x", monitorIds: [mine, foreign] }), "body.monitorIds.1")
      expectInvalid(yield* post({ name: "x", monitorIds: ["mon_unknown"] }), "body.monitorIds.0")
      expectInvalid(yield* post({ name: "x", extra: true }), "body.extra")
      const created = yield* create(key, { name: "Core", monitorIds: [mine] })
      const refused = yield* call(`/api/v1/components/${created.id}`, {
        method: "PATCH",
        token: key,
        body: { monitorIds: [foreign] }
      })
      expectInvalid(refused, "body.monitorIds.0")
      expect((yield* call(`/api/v1/components/${created.id}`, { token: key })).body.monitorIds).toEqual([mine])
      expect((yield* call("/api/v1/components", { token: key })).body.count).toBe(1)
    }))

  it.effect("another organization's component answers 404; scopes monitors:read and monitors:write", () =>
    Effect.gen(function*() {
      const owner = yield* newOrg("cmp")
      const stranger = yield* newOrg("cmp")
      const { id } = yield* create(owner.key, { name: "Private" })
      for (
        const response of [
          yield* call(`/api/v1/components/${id}`, { token: stranger.key }),
          yield* call(`/api/v1/components/${id}`, { method: "PATCH", token: stranger.key, body: { name: "x" } }),
          yield* call(`/api/v1/components/${id}`, { method: "DELETE", token: stranger.key })
        ]
      ) {
        expect(response.status).toBe(404)
        expect(response.body.error).toBe("not_found")
      }
      expect((yield* call("/api/v1/components", { token: stranger.key })).body).toEqual({ components: [], count: 0 })

      const reader = yield* newOrg("cmp", ["monitors:read"])
      expect((yield* call("/api/v1/components", { token: reader.key })).status).toBe(200)
      const write = yield* call("/api/v1/components", { method: "POST", token: reader.key, body: { name: "x" } })
      expect(write.status).toBe(403)
      const incidentsOnly = yield* newOrg("cmp", ["incidents:read", "incidents:write"])
      expect((yield* call("/api/v1/components", { token: incidentsOnly.key })).status).toBe(403)
    }))
})
