import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect } from "effect"
import { Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { inject } from "vitest"
import { LogSink } from "../../services/platform/Logging.ts"
import { adminToken, bootstrapOrg, request, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"

const expectErrorBody = (body: any, error: string) => {
  expect(body.error).toBe(error)
  expect(typeof body.message).toBe("string")
  expect(JSON.stringify(body)).not.toMatch(/\bat .*\.ts:\d+/)
}

/** Each row of GUIDE §4's error table, produced through the real server. */
describe("error model", () => {
  it.live("400, 401, 403, 404, 409, 413, 415 and request ids", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const base = app.baseUrl
      const { key } = yield* bootstrapOrg(base, { slug: "errors", scopes: ["monitors:read"] })
      const admin = { token: adminToken }

      const invalid = yield* request(`${base}/api/v1/admin/orgs`, {
        ...admin,
        method: "POST",
        body: { slug: "Not A Slug", name: "x" }
      })
      expect(invalid.status).toBe(400)
      expectErrorBody(invalid.body, "validation_error")
      expect(invalid.body.details).toEqual([{ path: "body.slug", message: expect.any(String) }])

      const missingField = yield* request(`${base}/api/v1/admin/orgs`, {
        ...admin,
        method: "POST",
        body: { slug: "ok" }
      })
      expect(missingField.status).toBe(400)
      expect(missingField.body.details[0].path).toBe("body.name")

      const malformed = yield* request(`${base}/api/v1/admin/orgs`, { ...admin, method: "POST", body: "{not json" })
      expect(malformed.status).toBe(400)
      expectErrorBody(malformed.body, "validation_error")

      const unauthorized = yield* request(`${base}/api/v1/me`)
      expect(unauthorized.status).toBe(401)
      expectErrorBody(unauthorized.body, "unauthorized")
      const malformedKey = yield* request(`${base}/api/v1/me`, { token: "not-a-key" })
      expect(malformedKey.status).toBe(401)

      const forbidden = yield* request(`${base}/api/v1/org/keys`, { token: key })
      expect(forbidden.status).toBe(403)
      expectErrorBody(forbidden.body, "forbidden")

      const unknownRoute = yield* request(`${base}/api/v1/no/such/route`, { token: key })
      expect(unknownRoute.status).toBe(404)
      expectErrorBody(unknownRoute.body, "not_found")
      const unknownOrg = yield* request(`${base}/api/v1/admin/orgs/nobody`, { ...admin, method: "PATCH", body: {} })
      expect(unknownOrg.status).toBe(404)
      expectErrorBody(unknownOrg.body, "not_found")

      const conflict = yield* request(`${base}/api/v1/admin/orgs`, {
        ...admin,
        method: "POST",
        body: { slug: "errors", name: "Twice" }
      })
      expect(conflict.status).toBe(409)
      expectErrorBody(conflict.body, "conflict")

      const tooLarge = yield* request(`${base}/api/v1/admin/orgs`, {
        ...admin,
        method: "POST",
        body: JSON.stringify({ slug: "big", name: "x".repeat(2 * 1024 * 1024) })
      })
      expect(tooLarge.status).toBe(413)
      expectErrorBody(tooLarge.body, "payload_too_large")

      // A chunked body has no Content-Length: the limit applies while reading.
      const chunked = yield* Effect.promise(async () => {
        const chunk = new TextEncoder().encode("x".repeat(64 * 1024))
        let sent = 0
        const body = new ReadableStream({
          pull(controller) {
            if (sent++ < 40) controller.enqueue(chunk)
            else controller.close()
          }
        })
        const response = await fetch(`${base}/api/v1/admin/orgs`, {
          method: "POST",
          headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
          body,
          duplex: "half"
        } as RequestInit)
        return { status: response.status, body: await response.json() }
      })
      expect(chunked.status).toBe(413)
      expectErrorBody(chunked.body, "payload_too_large")

      const wrongType = yield* request(`${base}/api/v1/admin/orgs`, {
        ...admin,
        method: "POST",
        body: "slug=x",
        headers: { "content-type": "text/plain" }
      })
      expect(wrongType.status).toBe(415)
      expectErrorBody(wrongType.body, "unsupported_media_type")

      for (const response of [invalid, unauthorized, forbidden, unknownRoute, conflict, tooLarge, wrongType]) {
        expect(response.headers.get("x-request-id")).toMatch(/^[A-Za-z0-9._-]{1,64}$/)
      }
      const echoed = yield* request(`${base}/healthz`, { headers: { "x-request-id": "trace-123" } })
      expect(echoed.headers.get("x-request-id")).toBe("trace-123")
      expect(echoed.body).toEqual({ status: "ok" })
    }).pipe(Effect.scoped))

  it.live("unknown body fields and null for a required field are 400s; a known path with another method is 405", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const { key } = yield* bootstrapOrg(app.baseUrl, { slug: "strict" })
      const monitors = `${app.baseUrl}/api/v1/monitors`

      const typo = yield* request(monitors, {
        token: key,
        method: "POST",
        body: { name: "api", url: "https://example.com", frequncy: 120 }
      })
      expect(typo.status).toBe(400)
      expectErrorBody(typo.body, "validation_error")
      expect(typo.body.details).toEqual([{ path: "body.frequncy", message: expect.any(String) }])
      // Nothing was created by the refused request.
      expect((yield* request(monitors, { token: key })).body.count).toBe(0)

      const created = yield* request(monitors, {
        token: key,
        method: "POST",
        body: { name: "api", url: "https://example.com", frequency: 120 }
      })
      expect(created.status).toBe(201)
      const nulled = yield* request(`${monitors}/${created.body.id}`, {
        token: key,
        method: "PATCH",
        body: { frequency: null }
      })
      expect(nulled.status).toBe(400)
      expect(nulled.body.details[0].path).toBe("body.frequency")
      expect((yield* request(`${monitors}/${created.body.id}`, { token: key })).body.frequency).toBe(120)

      const wrongMethod = yield* request(`${monitors}/${created.body.id}`, { token: key, method: "PUT", body: {} })
      expect(wrongMethod.status).toBe(405)
      expectErrorBody(wrongMethod.body, "method_not_allowed")
      expect(wrongMethod.headers.get("allow")).toBe("DELETE, GET, HEAD, PATCH")
      const wrongCollectionMethod = yield* request(monitors, { token: key, method: "DELETE" })
      expect(wrongCollectionMethod.status).toBe(405)
      expect(wrongCollectionMethod.headers.get("allow")).toBe("GET, HEAD, POST")
    }).pipe(Effect.scoped))

  it.live("500 internal_error without a stack trace, logged with its request id, and the process keeps serving", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const app = yield* startApp({ logFormat: "json" }, Context.make(LogSink, (line: string) => lines.push(line)))
      // Break the database under the running server: its queries now fail unexpectedly.
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`ALTER TABLE organizations RENAME TO organizations_gone`
      }).pipe(Effect.provideService(SqlClient.SqlClient, app.sql))
      const broken = yield* request(`${app.baseUrl}/api/v1/admin/orgs`, { token: adminToken })
      expect(broken.status).toBe(500)
      expect(broken.body).toEqual({ error: "internal_error", message: expect.any(String) })
      expect(JSON.stringify(broken.body)).not.toContain("organizations")
      const logged = yield* eventually(
        "the failure's log line",
        Effect.sync(() =>
          lines.map((text) => JSON.parse(text)).find((entry) =>
            String(entry.message).includes("unhandled request failure")
          )
        ),
        (entry) => entry !== undefined
      )
      expect(logged).toMatchObject({ level: "error", requestId: broken.headers.get("x-request-id") })
      const health = yield* request(`${app.baseUrl}/healthz`)
      expect(health.status).toBe(200)
    }).pipe(Effect.scoped))

  it.live(
    "a database that refuses connections answers 503 with Retry-After, and the server recovers",
    () =>
      Effect.gen(function*() {
        const app = yield* startApp()
        const { key } = yield* bootstrapOrg(app.baseUrl, { slug: "outage" })
        const monitors = `${app.baseUrl}/api/v1/monitors`
        expect((yield* request(monitors, { token: key })).status).toBe(200)
        const database = new URL(app.databaseUrl).pathname.slice(1)
        // From another connection: refuse new connections to the app's database and drop the open ones.
        const admin = (statement: string) =>
          Effect.gen(function*() {
            const sql = yield* SqlClient.SqlClient
            yield* sql.unsafe(statement)
          }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(inject("postgresUrl")), maxConnections: 1 })))
        yield* admin(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`)
        yield* admin(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${database}'`)

        const down = yield* request(monitors, { token: key })
        expect(down.status).toBe(503)
        expect(down.body).toEqual({ error: "unavailable", message: expect.any(String), retryAfter: 2 })
        expect(down.headers.get("retry-after")).toBe("2")

        yield* admin(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`)
        const recovered = yield* eventually(
          "the database back",
          request(monitors, { token: key }),
          (r) => r.status === 200
        )
        expect(recovered.body.count).toBe(0)
      }).pipe(Effect.scoped),
    { timeout: 90_000 }
  )
})
