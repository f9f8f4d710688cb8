import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { accountInterval } from "../../services/monitors/Uptime.ts"
import { adminToken, bootstrapOrg, request, startApp } from "../support/app.ts"

/** One app (fresh database, real cluster and scheduler) for the whole file. */
class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly sql: SqlClient.SqlClient
}>()("test/monitors/TestApp") {}

const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(startApp(), (app) => ({
    baseUrl: app.baseUrl,
    sql: Context.get(app.context as Context.Context<SqlClient.SqlClient>, SqlClient.SqlClient)
  }))
)

const HOUR = 3_600_000
const isoMillis = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
/** A closed local port: the scheduler's checks of these monitors fail fast and reach nothing. */
const target = "http://127.0.0.1:9/health"

let orgCounter = 0
/** A fresh organization (enterprise plan: the request quota stays out of the way) and its key. */
const newOrg = (scopes?: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestApp
    const slug = `mon-${process.pid}-${++orgCounter}`
    const org = yield* bootstrapOrg(baseUrl, { slug, plan: "enterprise", ...(scopes ? { scopes } : {}) })
    return { ...org, slug }
  })

const api = (path: string, init?: { method?: string; token?: string; body?: unknown }) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestApp
    return yield* request(`${baseUrl}/api/v1/monitors${path}`, init)
  })

const createMonitor = (token: string, body: Record<string, unknown>) =>
  Effect.map(api("", { method: "POST", token, body: { url: target, ...body } }), (response) => {
    expect(response.status, JSON.stringify(response.body)).toBe(201)
    return response.body
  })

/** Expects a 400 validation_error whose details name `path` (or a path below it). */
const expectInvalid = (response: { status: number; body: any }, path: string) => {
  expect(response.status, `${path}: ${JSON.stringify(response.body)}`).toBe(400)
  expect(response.body.error).toBe("validation_error")
  expect(typeof response.body.message).toBe("string")
  const paths: Array<string> = response.body.details.map((detail: { path: string }) => detail.path)
  expect(paths.some((p) => p === path || p.startsWith(`${path}.`)), `${path} in ${JSON.stringify(paths)}`).toBe(true)
}

const insertHeartbeat = (
  monitorId: string,
  at: Date,
  fields: { status?: string; responseTime?: number; statusCode?: number | null; error?: string | null } = {}
) =>
  Effect.gen(function*() {
    const { sql } = yield* TestApp
    yield* sql`
      INSERT INTO heartbeats (monitor_id, slot_at, attempt, checked_at, status, response_time_ms, status_code, error, region)
      VALUES (${monitorId}, ${at.toISOString()}::timestamptz, 0, ${at.toISOString()}::timestamptz,
              ${fields.status ?? "up"}, ${fields.responseTime ?? 42}, ${fields.statusCode ?? null}, ${
      fields.error ?? null
    },
              'test')`
  })

layer(TestAppLive, { excludeTestServices: true, timeout: "120 seconds" })("Monitors API", (it) => {
  it.effect("creates a monitor with the defaults and publishes monitor.changed", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg()
      const created = yield* createMonitor(key, { name: "Homepage" })
      expect(created).toMatchObject({
        name: "Homepage",
        url: target,
        checkType: "http",
        method: "GET",
        frequency: 60,
        timeout: 30,
        expectedCode: 200,
        headers: {},
        body: null,
        active: true,
        status: "pending",
        retries: 1,
        retryInterval: 20,
        degradedThresholdMs: null,
        assertions: null,
        uptime24h: 100,
        uptime7d: 100,
        uptime30d: 100,
        lastCheckedAt: null
      })
      expect(created.id).toMatch(/^mon_[A-Za-z0-9]+$/)
      expect(created.createdAt).toMatch(isoMillis)
      expect(created.heartbeats).toBeUndefined()

      const { sql } = yield* TestApp
      const events = yield* sql<{ type: string; org_id: string; data: any }>`
        SELECT type, org_id, data FROM domain_events WHERE type = 'monitor.changed' AND data->>'monitorId' = ${created.id}`
      expect(events).toHaveLength(1)
      expect(events[0].data).toMatchObject({ monitorId: created.id, change: "created" })

      const full = yield* createMonitor(key, {
        name: "API",
        url: "https://api.example.com/v1/health",
        checkType: "api",
        method: "POST",
        frequency: 300,
        timeout: 120,
        expectedCode: 201,
        headers: { "X-Token": "abc" },
        body: "{\"ping\":true}",
        assertions: [{ path: "$.status", op: "eq", value: "ok" }, { path: "$.items", op: "exists" }],
        degradedThresholdMs: 800,
        retries: 3,
        retryInterval: 30,
        active: false
      })
      expect(full).toMatchObject({
        checkType: "api",
        method: "POST",
        frequency: 300,
        timeout: 120,
        expectedCode: 201,
        headers: { "X-Token": "abc" },
        body: "{\"ping\":true}",
        assertions: [{ path: "$.status", op: "eq", value: "ok" }, { path: "$.items", op: "exists" }],
        degradedThresholdMs: 800,
        retries: 3,
        retryInterval: 30,
        active: false,
        status: "paused"
      })
      const others = [
        { name: "tcp", checkType: "tcp", url: "tcp://db.example.com:5432" },
        { name: "dns", checkType: "dns", url: "dns://example.com", dnsRecordType: "AAAA", expectedValue: "::1" },
        { name: "ws", checkType: "websocket", url: "wss://example.com/socket" }
      ]
      for (const body of others) {
        const monitor = yield* createMonitor(key, { ...body, active: false })
        expect(monitor).toMatchObject(body)
        // HTTP-only settings mean nothing for these checks.
        expect(monitor).toMatchObject({ method: null, expectedCode: null })
      }
    }))

  it.effect("answers 400 naming the field for every bound violated", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg()
      const post = (body: Record<string, unknown>) => api("", { method: "POST", token: key, body })
      const base = { name: "m", url: target }
      const cases: ReadonlyArray<[Record<string, unknown>, string]> = [
        [{ ...base, name: "x".repeat(101) }, "body.name"],
        [{ ...base, name: "" }, "body.name"],
        [{ name: "m" }, "body.url"],
        [{ url: target }, "body.name"],
        [{ ...base, frequency: 59 }, "body.frequency"],
        [{ ...base, frequency: 3601 }, "body.frequency"],
        [{ ...base, frequency: 90.5 }, "body.frequency"],
        [{ ...base, timeout: 0 }, "body.timeout"],
        [{ ...base, timeout: 121 }, "body.timeout"],
        [{ ...base, timeout: 60 }, "body.timeout"],
        [{ ...base, frequency: 120, timeout: 120 }, "body.timeout"],
        [{ ...base, expectedCode: 99 }, "body.expectedCode"],
        [{ ...base, expectedCode: 600 }, "body.expectedCode"],
        [{ ...base, method: "FETCH" }, "body.method"],
        [{ ...base, checkType: "ftp" }, "body.checkType"],
        [{ ...base, active: "yes" }, "body.active"],
        [{ ...base, headers: { "bad header": "x" } }, "body.headers"],
        [{ ...base, headers: { "X-A": 1 } }, "body.headers"],
        [{ ...base, retries: 11 }, "body.retries"],
        [{ ...base, retryInterval: 4 }, "body.retryInterval"],
        [{ ...base, url: "ftp://example.com" }, "body.url"],
        [{ ...base, url: "not a url" }, "body.url"],
        [{ ...base, checkType: "api", url: "example.com/health" }, "body.url"],
        [{ ...base, checkType: "tcp", url: "tcp://db.example.com" }, "body.url"],
        [{ ...base, checkType: "tcp", url: "http://db.example.com:5432" }, "body.url"],
        [{ ...base, checkType: "dns", url: "https://example.com" }, "body.url"],
        [{ ...base, checkType: "websocket", url: "https://example.com/socket" }, "body.url"],
        [{ ...base, assertions: [{ path: "$.a", op: "eq", value: 1 }] }, "body.assertions"],
        [{ ...base, checkType: "api", assertions: [{ path: "a", op: "eq" }] }, "body.assertions"],
        [{ ...base, dnsRecordType: "A" }, "body.dnsRecordType"]
      ]
      for (const [body, path] of cases) expectInvalid(yield* post(body), path)

      const listCases: ReadonlyArray<[string, string]> = [
        ["?limit=101", "query.limit"],
        ["?limit=0", "query.limit"],
        ["?limit=ten", "query.limit"],
        ["?offset=-1", "query.offset"],
        ["?active=maybe", "query.active"]
      ]
      for (const [query, path] of listCases) expectInvalid(yield* api(query, { token: key }), path)

      const monitor = yield* createMonitor(key, { name: "bounds", active: false })
      const heartbeatCases: ReadonlyArray<[string, string]> = [
        ["?limit=1001", "query.limit"],
        ["?limit=0", "query.limit"],
        ["?from=yesterday", "query.from"],
        ["?to=2026-13-01T00:00:00Z", "query.to"],
        ["?to=2026-02-30", "query.to"],
        ["?from=2026-02-02T00:00:00Z&to=2026-02-01T00:00:00Z", "query.from"]
      ]
      for (const [query, path] of heartbeatCases) {
        expectInvalid(yield* api(`/${monitor.id}/heartbeats${query}`, { token: key }), path)
      }

      // PATCH: field bounds, and cross-field rules against the stored monitor (frequency 60).
      const patch = (body: Record<string, unknown>) => api(`/${monitor.id}`, { method: "PATCH", token: key, body })
      const patchCases: ReadonlyArray<[Record<string, unknown>, string]> = [
        [{ name: "x".repeat(101) }, "body.name"],
        [{ frequency: 3601 }, "body.frequency"],
        [{ timeout: 60 }, "body.timeout"],
        [{ timeout: 121 }, "body.timeout"],
        [{ checkType: "tcp" }, "body.url"],
        [{ url: "wss://example.com" }, "body.url"],
        [{ assertions: [{ path: "$.ok", op: "exists" }] }, "body.assertions"]
      ]
      for (const [body, path] of patchCases) expectInvalid(yield* patch(body), path)
      // Lowering frequency to or below the stored timeout breaks the rule too, naming timeout.
      const after = yield* patch({ timeout: 90, frequency: 120 })
      expect(after.status).toBe(200)
      expectInvalid(yield* patch({ frequency: 60 }), "body.timeout")
      // Nothing was changed by the rejected patches.
      const stored = yield* api(`/${monitor.id}`, { token: key })
      expect(stored.body).toMatchObject({ name: "bounds", frequency: 120, timeout: 90, checkType: "http", url: target })
    }))

  it.effect("lists newest first with paging, count and the active filter", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg()
      const names: Array<string> = []
      for (let i = 0; i < 5; i++) {
        names.push(`m${i}`)
        yield* createMonitor(key, { name: `m${i}`, active: i % 2 === 0 ? false : true, frequency: 3600 })
      }
      const all = yield* api("", { token: key })
      expect(all.status).toBe(200)
      expect(all.body.count).toBe(5)
      expect(all.body.monitors.map((m: any) => m.name)).toEqual([...names].reverse())
      for (const monitor of all.body.monitors) {
        // Inactive monitors have no data; active ones may have been checked by the scheduler already.
        if (!monitor.active) expect(monitor.uptime24h).toBe(100)
        else expect(monitor.uptime24h).toBeTypeOf("number")
        expect(monitor.uptime7d).toBeUndefined()
        expect(monitor.uptime30d).toBeUndefined()
        expect(monitor.heartbeats).toBeUndefined()
      }

      const page = yield* api("?limit=2&offset=1", { token: key })
      expect(page.body.count).toBe(5)
      expect(page.body.monitors.map((m: any) => m.name)).toEqual(["m3", "m2"])

      const beyond = yield* api("?offset=10", { token: key })
      expect(beyond.body).toEqual({ monitors: [], count: 5 })

      const active = yield* api("?active=true", { token: key })
      expect(active.body.count).toBe(2)
      expect(active.body.monitors.map((m: any) => m.name)).toEqual(["m3", "m1"])
      const inactive = yield* api("?active=false&limit=1", { token: key })
      expect(inactive.body.count).toBe(3)
      expect(inactive.body.monitors.map((m: any) => m.name)).toEqual(["m4"])
    }))

  it.effect("get by id includes uptime over 24h, 7d and 30d and the 50 newest heartbeats", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg()
      const monitor = yield* createMonitor(key, { name: "with data", active: false })
      const { sql } = yield* TestApp
      const now = Date.now()
      // 1 h up then 1 h down, closed intervals in the rollups: 50 % in every window.
      yield* accountInterval(sql, {
        monitorId: monitor.id,
        from: new Date(now - 3 * HOUR),
        to: new Date(now - 2 * HOUR),
        status: "up"
      })
      yield* accountInterval(sql, {
        monitorId: monitor.id,
        from: new Date(now - 2 * HOUR),
        to: new Date(now - HOUR),
        status: "down"
      })
      // 60 heartbeats one minute apart, the newest a failure with a status code and an error.
      for (let i = 59; i >= 0; i--) {
        yield* insertHeartbeat(
          monitor.id,
          new Date(now - HOUR - i * 60_000),
          i === 0 ? { status: "down", responseTime: 1234, statusCode: 503, error: "unexpected status 503" } : {
            responseTime: 100 + i
          }
        )
      }

      const got = yield* api(`/${monitor.id}`, { token: key })
      expect(got.status).toBe(200)
      expect(got.body.uptime24h).toBe(50)
      expect(got.body.uptime7d).toBe(50)
      expect(got.body.uptime30d).toBe(50)
      expect(got.body.heartbeats).toHaveLength(50)
      expect(got.body.heartbeats[0]).toEqual({
        timestamp: new Date(now - HOUR).toISOString(),
        status: "down",
        responseTime: 1234,
        region: "test",
        statusCode: 503,
        error: "unexpected status 503"
      })
      expect(got.body.heartbeats[1]).toEqual({
        timestamp: new Date(now - HOUR - 60_000).toISOString(),
        status: "up",
        responseTime: 101,
        region: "test"
      })
      const times = got.body.heartbeats.map((h: any) => Date.parse(h.timestamp))
      expect([...times].sort((a, b) => b - a)).toEqual(times)
      for (const heartbeat of got.body.heartbeats) expect(heartbeat.timestamp).toMatch(isoMillis)

      const listed = yield* api("", { token: key })
      expect(listed.body.monitors[0]).toMatchObject({ id: monitor.id, uptime24h: 50 })

      // The heartbeat list: newest first, default limit 100, count = total in range.
      const heartbeats = yield* api(`/${monitor.id}/heartbeats`, { token: key })
      expect(heartbeats.status).toBe(200)
      expect(heartbeats.body.count).toBe(60)
      expect(heartbeats.body.heartbeats).toHaveLength(60)
      expect(heartbeats.body.heartbeats[0].status).toBe("down")
      const limited = yield* api(`/${monitor.id}/heartbeats?limit=10`, { token: key })
      expect(limited.body.count).toBe(60)
      expect(limited.body.heartbeats).toHaveLength(10)
      // [now-1h-30min, now-1h-20min] holds 11 heartbeats (both bounds inclusive).
      const from = new Date(now - HOUR - 30 * 60_000).toISOString()
      const to = new Date(now - HOUR - 20 * 60_000).toISOString()
      const ranged = yield* api(`/${monitor.id}/heartbeats?from=${from}&to=${to}&limit=5`, { token: key })
      expect(ranged.status).toBe(200)
      expect(ranged.body.count).toBe(11)
      expect(ranged.body.heartbeats.map((h: any) => h.timestamp)).toEqual(
        [20, 21, 22, 23, 24].map((m) => new Date(now - HOUR - m * 60_000).toISOString())
      )
      // An offset whose `+` was not URL-encoded still parses.
      const offset = new Date(now - HOUR - 30 * 60_000 + 2 * HOUR).toISOString().replace("Z", "+02:00")
      const unencoded = yield* api(`/${monitor.id}/heartbeats?from=${offset}&limit=1`, { token: key })
      expect(unencoded.body.count).toBe(31)
      const onlyFrom = yield* api(`/${monitor.id}/heartbeats?from=${encodeURIComponent(from)}`, { token: key })
      expect(onlyFrom.body.count).toBe(31)
      const empty = yield* api(`/${monitor.id}/heartbeats?to=2000-01-01`, { token: key })
      expect(empty.body).toEqual({ heartbeats: [], count: 0 })
    }))

  it.effect("PATCH changes any subset; active false pauses and true resumes", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg()
      const monitor = yield* createMonitor(key, { name: "before", frequency: 3600, headers: { "X-A": "1" } })
      const patch = (body: Record<string, unknown>) => api(`/${monitor.id}`, { method: "PATCH", token: key, body })

      const renamed = yield* patch({ name: "after", frequency: 300 })
      expect(renamed.status).toBe(200)
      expect(renamed.body).toMatchObject({
        id: monitor.id,
        name: "after",
        frequency: 300,
        url: target,
        timeout: 30,
        headers: { "X-A": "1" },
        createdAt: monitor.createdAt
      })
      expect(renamed.body.uptime30d).toBeTypeOf("number")

      const withBody = yield* patch({
        method: "POST",
        body: "hello",
        headers: { "X-B": "2" },
        degradedThresholdMs: 500
      })
      expect(withBody.body).toMatchObject({
        method: "POST",
        body: "hello",
        headers: { "X-B": "2" },
        degradedThresholdMs: 500
      })
      const cleared = yield* patch({ body: null, degradedThresholdMs: null })
      expect(cleared.body).toMatchObject({ method: "POST", body: null, degradedThresholdMs: null, name: "after" })

      const retyped = yield* patch({ checkType: "tcp", url: "tcp://127.0.0.1:9" })
      expect(retyped.body).toMatchObject({ checkType: "tcp", url: "tcp://127.0.0.1:9" })

      const paused = yield* patch({ active: false })
      expect(paused.body).toMatchObject({ active: false, status: "paused" })
      const resumed = yield* patch({ active: true })
      expect(resumed.status).toBe(200)
      expect(resumed.body.active).toBe(true)
      expect(["pending", "up", "degraded", "down"]).toContain(resumed.body.status)

      const { sql } = yield* TestApp
      const events = yield* sql<{ n: string }>`
        SELECT count(*) AS n FROM domain_events WHERE type = 'monitor.changed' AND data->>'monitorId' = ${monitor.id}`
      expect(Number(events[0].n)).toBe(7)

      const missing = yield* api("/mon_doesnotexist", { method: "PATCH", token: key, body: { name: "x" } })
      expect(missing.status).toBe(404)
      expect(missing.body.error).toBe("not_found")
    }))

  it.effect("DELETE is a soft delete: 204, then inactive and paused, data kept", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg()
      const monitor = yield* createMonitor(key, { name: "doomed", frequency: 3600 })
      yield* insertHeartbeat(monitor.id, new Date(Date.now() - HOUR))

      const deleted = yield* api(`/${monitor.id}`, { method: "DELETE", token: key })
      expect(deleted.status).toBe(204)
      expect(deleted.body).toBeUndefined()

      const got = yield* api(`/${monitor.id}`, { token: key })
      expect(got.status).toBe(200)
      expect(got.body).toMatchObject({ id: monitor.id, name: "doomed", active: false, status: "paused" })
      expect(got.body.heartbeats.length).toBeGreaterThanOrEqual(1)

      const inactive = yield* api("?active=false", { token: key })
      expect(inactive.body.monitors.map((m: any) => m.id)).toContain(monitor.id)
      const active = yield* api("?active=true", { token: key })
      expect(active.body.monitors.map((m: any) => m.id)).not.toContain(monitor.id)
      expect((yield* api("", { token: key })).body.count).toBe(1)

      // Deleting again is harmless; an unknown id is a 404.
      expect((yield* api(`/${monitor.id}`, { method: "DELETE", token: key })).status).toBe(204)
      const unknown = yield* api("/mon_unknown", { method: "DELETE", token: key })
      expect(unknown.status).toBe(404)
      expect(unknown.body.error).toBe("not_found")
    }))

  it.effect("enforces scopes: monitors:read reads, monitors:write changes", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const owner = yield* newOrg()
      const monitor = yield* createMonitor(owner.key, { name: "scoped", active: false })
      const keyWith = (scopes: ReadonlyArray<string>) =>
        Effect.map(
          request(`${baseUrl}/api/v1/admin/orgs/${owner.slug}/keys`, {
            method: "POST",
            token: adminToken,
            body: { username: `${owner.slug}-owner`, scopes }
          }),
          (response) => {
            expect(response.status).toBe(201)
            return response.body.key as string
          }
        )
      const reader = yield* keyWith(["monitors:read"])
      expect((yield* api("", { token: reader })).status).toBe(200)
      expect((yield* api(`/${monitor.id}`, { token: reader })).status).toBe(200)
      expect((yield* api(`/${monitor.id}/heartbeats`, { token: reader })).status).toBe(200)
      const denied = yield* api("", { method: "POST", token: reader, body: { name: "x", url: target } })
      expect(denied.status).toBe(403)
      expect(denied.body).toEqual({ error: "forbidden", message: expect.stringContaining("monitors:write") })
      expect((yield* api(`/${monitor.id}`, { method: "PATCH", token: reader, body: { name: "x" } })).status).toBe(403)
      expect((yield* api(`/${monitor.id}`, { method: "DELETE", token: reader })).status).toBe(403)

      const outsider = yield* keyWith(["incidents:read"])
      const noRead = yield* api("", { token: outsider })
      expect(noRead.status).toBe(403)
      expect(noRead.body.message).toContain("monitors:read")

      const writer = yield* keyWith(["monitors:write"])
      expect(
        (yield* api("", { method: "POST", token: writer, body: { name: "w", url: target, active: false } })).status
      )
        .toBe(201)
      expect((yield* api("", { token: writer })).status).toBe(403)

      expect((yield* api("", {})).status).toBe(401)
    }))

  it.effect("another organization's monitor is a 404 on every endpoint", () =>
    Effect.gen(function*() {
      const owner = yield* newOrg()
      const other = yield* newOrg()
      const monitor = yield* createMonitor(owner.key, { name: "private", active: false })
      const attempts = [
        api(`/${monitor.id}`, { token: other.key }),
        api(`/${monitor.id}/heartbeats`, { token: other.key }),
        api(`/${monitor.id}`, { method: "PATCH", token: other.key, body: { name: "stolen" } }),
        api(`/${monitor.id}`, { method: "DELETE", token: other.key })
      ]
      for (const attempt of attempts) {
        const response = yield* attempt
        expect(response.status).toBe(404)
        expect(response.body).toEqual({ error: "not_found", message: expect.any(String) })
      }
      const theirs = yield* api("", { token: other.key })
      expect(theirs.body).toEqual({ monitors: [], count: 0 })
      // Untouched.
      const mine = yield* api(`/${monitor.id}`, { token: owner.key })
      expect(mine.body).toMatchObject({ name: "private", active: false })
    }))
})

describe("monitor targets while private addresses are not allowed", () => {
  it.live("a literal private or loopback URL is a 400 saying how to allow it; public names and DNS checks pass", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ outboundAllowPrivate: false })
      const { key } = yield* bootstrapOrg(app.baseUrl, { slug: "no-private" })
      const post = (body: Record<string, unknown>) =>
        request(`${app.baseUrl}/api/v1/monitors`, { method: "POST", token: key, body: { name: "m", ...body } })
      for (const url of ["http://127.0.0.1:8080/", "https://10.1.2.3/", "http://[::1]/", "http://localhost:3000/"]) {
        const refused = yield* post({ url })
        expect(refused.status, url).toBe(400)
        expect(refused.body.details).toEqual([{
          path: "body.url",
          message: expect.stringContaining("OUTBOUND_ALLOW_PRIVATE")
        }])
      }
      expect((yield* post({ checkType: "tcp", url: "tcp://192.168.1.10:5432" })).status).toBe(400)
      expect((yield* request(`${app.baseUrl}/api/v1/monitors`, { token: key })).body.count).toBe(0)

      const allowed = yield* post({ url: "https://example.com/" })
      expect(allowed.status).toBe(201)
      expect((yield* post({ checkType: "dns", url: "dns://localhost" })).status).toBe(201)
      const moved = yield* request(`${app.baseUrl}/api/v1/monitors/${allowed.body.id}`, {
        method: "PATCH",
        token: key,
        body: { url: "http://169.254.169.254/latest/meta-data" }
      })
      expect(moved.status).toBe(400)
      expect(moved.body.details[0].message).toContain("link-local")
    }).pipe(Effect.scoped))
})
