import { expect, it } from "@effect/vitest"
import { Context, Deferred, Effect } from "effect"
import { rendered, StatusCache } from "../../services/status/StatusCache.ts"
import { bootstrapOrg, request, startApp, startAppOnDatabase } from "../support/app.ts"
import { eventually } from "../support/wait.ts"

/**
 * The public status surface served from each runner's cache of rendered bytes: ETags and
 * 304s, Cache-Control, CORS on every public route, one computation for concurrent misses,
 * and a change made through one runner served by another within a second.
 */

const publicRoutes = (slug: string, monitorId: string) => [
  `/api/v1/status/${slug}`,
  `/api/v1/widget/${slug}`,
  `/api/v1/feed/${slug}`,
  `/api/v1/badge/${slug}/${monitorId}`,
  `/status/${slug}`
]

const createMonitor = (baseUrl: string, key: string) =>
  Effect.map(
    request(`${baseUrl}/api/v1/monitors`, {
      method: "POST",
      token: key,
      // Refused at once, no retry, then an hour's quiet: one status change, at its first check.
      body: { name: "API", url: "http://127.0.0.1:9/", frequency: 3600, retries: 0 }
    }),
    (response) => {
      expect(response.status, JSON.stringify(response.body)).toBe(201)
      return response.body.id as string
    }
  )

it.effect(
  "every public route answers a repeated request with its ETag by a 304, with CORS and a preflight",
  () =>
    Effect.gen(function*() {
      const app = yield* startApp({ trustedProxies: [] })
      const { key } = yield* bootstrapOrg(app.baseUrl, { slug: "cached", plan: "enterprise" })
      const monitorId = yield* createMonitor(app.baseUrl, key)
      // The pages change once more, when the first check marks the monitor down: wait for that,
      // so a repeated request below meets the same bytes.
      yield* eventually(
        "the monitor's first check on the public summary",
        request(`${app.baseUrl}/api/v1/status/cached`),
        (summary) => summary.body?.monitors?.down === 1
      )
      for (const path of publicRoutes("cached", monitorId)) {
        const first = yield* request(`${app.baseUrl}${path}`, { headers: { origin: "https://example.com" } })
        expect(first.status, path).toBe(200)
        const etag = first.headers.get("etag")
        expect(etag, path).toMatch(/^"[A-Za-z0-9_-]{27}"$/)
        expect(first.headers.get("access-control-allow-origin"), path).toBe("*")
        expect(first.headers.get("access-control-expose-headers"), path).toContain("etag")
        expect(first.headers.get("cache-control"), path).toBe(
          path.includes("/feed/") ? "public, max-age=300" : "public, max-age=5, stale-while-revalidate=30"
        )
        const again = yield* request(`${app.baseUrl}${path}`, { headers: { "if-none-match": `W/"x", ${etag}` } })
        expect(again.status, path).toBe(304)
        expect(again.body, path).toBeUndefined()
        expect(again.headers.get("etag"), path).toBe(etag)
        expect(again.headers.get("access-control-allow-origin"), path).toBe("*")
        const other = yield* request(`${app.baseUrl}${path}`, { headers: { "if-none-match": `"stale"` } })
        expect(other.status, path).toBe(200)

        const preflight = yield* request(`${app.baseUrl}${path}`, {
          method: "OPTIONS",
          headers: {
            origin: "https://example.com",
            "access-control-request-method": "GET",
            "access-control-request-headers": "if-none-match"
          }
        })
        expect(preflight.status, path).toBe(204)
        expect(preflight.headers.get("access-control-allow-origin"), path).toBe("*")
        expect(preflight.headers.get("access-control-allow-methods"), path).toContain("GET")
        expect(preflight.headers.get("access-control-allow-headers"), path).toContain("if-none-match")
      }
      // Subscribe is public too: its preflight and its answers carry CORS.
      const subscribePreflight = yield* request(`${app.baseUrl}/api/v1/subscribe`, {
        method: "OPTIONS",
        headers: { origin: "https://example.com", "access-control-request-method": "POST" }
      })
      expect(subscribePreflight.status).toBe(204)
      expect(subscribePreflight.headers.get("access-control-allow-methods")).toContain("POST")
      const challenge = yield* request(`${app.baseUrl}/api/v1/subscribe/challenge`)
      expect(challenge.headers.get("access-control-allow-origin")).toBe("*")
      // An unknown organization is still a CORS-readable 404; a private route gets no CORS.
      const unknown = yield* request(`${app.baseUrl}/api/v1/status/no-such-org`)
      expect(unknown.status).toBe(404)
      expect(unknown.headers.get("access-control-allow-origin")).toBe("*")
      const privateRoute = yield* request(`${app.baseUrl}/api/v1/monitors`, { token: key })
      expect(privateRoute.headers.get("access-control-allow-origin")).toBeNull()
    }),
  { timeout: 120_000 }
)

it.effect("concurrent misses share one computation, and a fresh entry costs none", () =>
  Effect.gen(function*() {
    const app = yield* startApp()
    const cache = Context.get(app.context as Context.Context<StatusCache>, StatusCache)
    let computations = 0
    const compute = Effect.promise(async () => {
      computations++
      await new Promise((resolve) => setTimeout(resolve, 50))
      return rendered("{}", "application/json")
    })
    const results = yield* Effect.all(Array.from({ length: 50 }, () => cache.get("org_x", "summary", compute)), {
      concurrency: "unbounded"
    })
    expect(computations).toBe(1)
    expect(new Set(results.map((result) => result.etag)).size).toBe(1)
    yield* cache.get("org_x", "summary", compute)
    expect(computations).toBe(1)
    // Invalidation (what a domain event does) makes the next request compute again.
    yield* cache.invalidate("org_x")
    yield* cache.get("org_x", "summary", compute)
    expect(computations).toBe(2)
  }), { timeout: 120_000 })

it.effect(
  "an incident opened through one runner is in the summary a second runner serves within a second",
  () =>
    Effect.gen(function*() {
      const first = yield* startApp()
      const second = yield* startAppOnDatabase(first.databaseUrl)
      const { key } = yield* bootstrapOrg(first.baseUrl, { slug: "two-runners", plan: "enterprise" })
      const summary = (baseUrl: string) => request(`${baseUrl}/api/v1/status/two-runners`)
      // Both runners have the quiet summary cached.
      expect((yield* summary(first.baseUrl)).body.activeIncidents).toBe(0)
      expect((yield* summary(second.baseUrl)).body.activeIncidents).toBe(0)
      // A transaction left open elsewhere on the server (another database's, in the suite)
      // holds back every ordered read of the outbox: the change must arrive anyway.
      const release = yield* Deferred.make<void>()
      const holding = yield* Deferred.make<void>()
      yield* first.sql.withTransaction(Effect.gen(function*() {
        yield* first.sql`SELECT pg_current_xact_id()::text AS xid`
        yield* Deferred.succeed(holding, undefined)
        yield* Deferred.await(release)
      })).pipe(Effect.forkScoped)
      yield* Deferred.await(holding)
      const created = yield* request(`${first.baseUrl}/api/v1/incidents`, {
        method: "POST",
        token: key,
        body: { title: "Database failover", severity: "major" }
      })
      expect(created.status).toBe(201)
      const start = Date.now()
      const seen = yield* eventually(
        "the incident on the second runner",
        summary(second.baseUrl),
        (response) => response.body.activeIncidents === 1,
        { timeoutMs: 10_000, pollMs: 10 }
      ).pipe(Effect.ensuring(Deferred.succeed(release, undefined)))
      const elapsed = Date.now() - start
      expect(seen.body.overallStatus).toBe("major_outage")
      expect(elapsed).toBeLessThan(1000)
    }),
  { timeout: 120_000 }
)
