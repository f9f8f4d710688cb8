import { expect, it } from "@effect/vitest"
import { Context, Effect } from "effect"
import type * as Http from "node:http"
import { LiveServer } from "../../src/http/live/LiveRoutes.ts"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"

/**
 * The raw fast path of cached public answers (`PublicFastPath.ts`) answers a hit exactly as
 * the Effect routes do — status, bytes and every header but the per-request ones — with
 * the same per-IP limit behind a trusted proxy, 304s, and falls through on an invalidated
 * entry and on a spent limit.
 */

/** Headers that differ per request whoever answers. */
const perRequest = new Set(["date", "x-request-id", "connection", "keep-alive", "x-ratelimit-remaining"])

const fetchRaw = (url: string, headers: Record<string, string>) =>
  Effect.promise(async () => {
    const response = await fetch(url, { headers })
    const body = Buffer.from(await response.arrayBuffer())
    const stable: Record<string, string> = {}
    response.headers.forEach((value, name) => {
      if (!perRequest.has(name)) stable[name] = value
    })
    return { status: response.status, body, stable, headers: response.headers }
  })

it.live("a cached hit is served by the fast path exactly as by the routes", () =>
  Effect.gen(function*() {
    const app = yield* startApp({ trustedProxies: ["127.0.0.1"] })
    const { key } = yield* bootstrapOrg(app.baseUrl, { slug: "fast", plan: "enterprise" })
    const live = Context.get(app.context as Context.Context<LiveServer>, LiveServer)
    const original = live.fastPath!
    let served = 0
    live.fastPath = (req: Http.IncomingMessage, res: Http.ServerResponse) => {
      const answered = original(req, res)
      if (answered) served++
      return answered
    }
    const monitor = yield* request(`${app.baseUrl}/api/v1/monitors`, {
      method: "POST",
      token: key,
      // Refused at once, no retry, then an hour's quiet: one status change, at its first check.
      body: { name: "API", url: "http://127.0.0.1:9/", frequency: 3600, retries: 0 }
    })
    expect(monitor.status).toBe(201)
    const badge = `/api/v1/badge/fast/${monitor.body.id}`
    // The monitor's creation and its first check's status change each invalidate the
    // organization's entries when they arrive: wait for both (a badge with an uptime from the
    // fast path), so no invalidation falls between a route's answer and the fast path's below.
    yield* eventually(
      "the monitor's first check and its invalidation to pass",
      Effect.gen(function*() {
        const before = served
        const warm = yield* fetchRaw(`${app.baseUrl}${badge}?label=warm-up`, { "x-forwarded-for": "192.0.2.1" })
        return { fast: served - before, checked: !warm.body.toString("utf8").includes("no data") }
      }),
      ({ checked, fast }) => fast === 1 && checked
    )
    const client = { "x-forwarded-for": "203.0.113.7", origin: "https://example.com" }
    for (
      const path of [
        "/api/v1/status/fast",
        "/api/v1/widget/fast",
        "/api/v1/feed/fast",
        "/status/fast",
        badge,
        // The badge's options are part of its cache entry: each its own first miss, then a hit.
        `${badge}?style=flat-square&label=API%20uptime`,
        `${badge}?period=7d&unknown=ignored`
      ]
    ) {
      const before = served
      const slow = yield* fetchRaw(`${app.baseUrl}${path}`, client)
      expect(served, path).toBe(before)
      const fast = yield* fetchRaw(`${app.baseUrl}${path}`, client)
      expect(served, path).toBe(before + 1)
      expect(fast.status, path).toBe(200)
      expect(fast.body.equals(slow.body), path).toBe(true)
      expect(fast.stable, path).toEqual(slow.stable)
      expect(fast.headers.get("x-request-id"), path).toMatch(/^[0-9a-f-]{36}$/)
      // One limiter, one client address: the window counts both answers.
      const remaining = slow.headers.get("x-ratelimit-remaining")
      if (remaining !== null) {
        expect(Number(fast.headers.get("x-ratelimit-remaining")), path).toBe(Number(remaining) - 1)
      }
      const notModified = yield* fetchRaw(`${app.baseUrl}${path}`, {
        ...client,
        "if-none-match": slow.headers.get("etag")!
      })
      expect(notModified.status, path).toBe(304)
      expect(served, path).toBe(before + 2)
      expect(notModified.headers.get("access-control-allow-origin"), path).toBe("*")
      expect(notModified.headers.get("etag"), path).toBe(slow.headers.get("etag"))
    }

    // An invalid badge option is the route's 400, never a fast answer.
    const before = served
    expect((yield* fetchRaw(`${app.baseUrl}${badge}?style=wobbly`, client)).status).toBe(400)
    expect(served).toBe(before)

    // An incident invalidates the entry: the next answer comes from the routes, with the incident.
    const created = yield* request(`${app.baseUrl}/api/v1/incidents`, {
      method: "POST",
      token: key,
      body: { title: "Outage", severity: "major" }
    })
    expect(created.status).toBe(201)
    const afterIncident = yield* Effect.gen(function*() {
      for (let attempt = 0; attempt < 500; attempt++) {
        const answer = yield* fetchRaw(`${app.baseUrl}/api/v1/status/fast`, client)
        if (JSON.parse(answer.body.toString()).activeIncidents === 1) return answer
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
      }
      return yield* Effect.die(new Error("the incident never showed"))
    })
    const hit = yield* fetchRaw(`${app.baseUrl}/api/v1/status/fast`, client)
    expect(hit.body.equals(afterIncident.body)).toBe(true)

    // A spent limit falls through to the route's own 429 (the page's is HTML).
    const spender = { "x-forwarded-for": "198.51.100.9" }
    let last = yield* fetchRaw(`${app.baseUrl}/status/fast`, spender)
    for (let i = 0; i < 100 && last.status === 200; i++) last = yield* fetchRaw(`${app.baseUrl}/status/fast`, spender)
    expect(last.status).toBe(429)
    expect(last.headers.get("content-type")).toContain("text/html")
    // Another client is still served.
    expect((yield* fetchRaw(`${app.baseUrl}/status/fast`, { "x-forwarded-for": "198.51.100.10" })).status).toBe(200)
  }), { timeout: 120_000 })
