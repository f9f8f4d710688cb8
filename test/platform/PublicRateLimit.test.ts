import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Http from "node:http"
import { bootstrapOrg, request, startApp } from "../support/app.ts"

/** GET from a chosen loopback source address, so the server sees a different client IP. */
const getFrom = (url: string, localAddress: string, headers?: Record<string, string>) =>
  Effect.promise(() =>
    new Promise<{ status: number; headers: Http.IncomingHttpHeaders; body: any }>((resolve, reject) => {
      Http.get(url, { localAddress, headers }, (response) => {
        let text = ""
        response.on("data", (chunk) => text += chunk)
        response.on(
          "end",
          () => resolve({ status: response.statusCode!, headers: response.headers, body: JSON.parse(text) })
        )
      }).on("error", reject)
    })
  )

describe("public endpoints", () => {
  it.live("are limited per client IP, apart from the organization's key quota", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const { key } = yield* bootstrapOrg(app.baseUrl, { slug: "public-org" })
      const second = new Date().getUTCSeconds()
      if (second > 45) yield* Effect.sleep(`${61 - second} seconds`)
      const url = `${app.baseUrl}/api/v1/status/public-org`

      const first = yield* request(url)
      expect(first.status).toBe(200)
      expect(first.body).toMatchObject({ overallStatus: "operational", monitors: { total: 0 }, activeIncidents: 0 })
      expect(first.headers.get("x-ratelimit-limit")).toBe("100")
      expect(first.headers.get("x-ratelimit-remaining")).toBe("99")
      for (let i = 1; i < 100; i++) expect((yield* request(url)).status).toBe(200)
      const limited = yield* request(url)
      expect(limited.status).toBe(429)
      expect(limited.body).toEqual({
        error: "rate_limited",
        message: expect.any(String),
        retryAfter: expect.any(Number)
      })
      expect(Number(limited.headers.get("retry-after"))).toBe(limited.body.retryAfter)

      // The key's quota was not touched by 101 public requests...
      const me = yield* request(`${app.baseUrl}/api/v1/me`, { token: key })
      expect(me.status).toBe(200)
      expect(me.headers.get("x-ratelimit-remaining")).toBe("49")
      // ...and another client IP has its own public allowance.
      const other = yield* getFrom(url, "127.0.0.2")
      expect(other.status).toBe(200)
      expect(other.headers["x-ratelimit-remaining"]).toBe("99")

      // Spending the key quota leaves the public endpoint alone for other clients.
      for (let i = 0; i < 49; i++) yield* request(`${app.baseUrl}/api/v1/me`, { token: key })
      expect((yield* request(`${app.baseUrl}/api/v1/me`, { token: key })).status).toBe(429)
      expect((yield* getFrom(url, "127.0.0.3")).status).toBe(200)

      const unknown = yield* getFrom(`${app.baseUrl}/api/v1/status/nobody-here`, "127.0.0.4")
      expect(unknown.status).toBe(404)
      expect(unknown.body.error).toBe("not_found")
    }).pipe(Effect.scoped), { timeout: 90_000 })

  it.live("honour X-Forwarded-For only from a proxy listed in TRUSTED_PROXIES", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ trustedProxies: ["127.0.0.5", "10.0.0.0/8"] })
      yield* bootstrapOrg(app.baseUrl, { slug: "proxied" })
      const second = new Date().getUTCSeconds()
      if (second > 50) yield* Effect.sleep(`${61 - second} seconds`)
      const url = `${app.baseUrl}/api/v1/status/proxied`
      const remaining = (response: { headers: Http.IncomingHttpHeaders }) =>
        Number(response.headers["x-ratelimit-remaining"])

      // Through the trusted proxy, each forwarded client has its own allowance; trusted hops are skipped.
      expect(remaining(yield* getFrom(url, "127.0.0.5", { "x-forwarded-for": "198.51.100.1" }))).toBe(99)
      expect(remaining(yield* getFrom(url, "127.0.0.5", { "x-forwarded-for": "198.51.100.1, 10.1.2.3" }))).toBe(98)
      expect(remaining(yield* getFrom(url, "127.0.0.5", { "x-forwarded-for": "198.51.100.2" }))).toBe(99)
      // From an untrusted peer the header is ignored: a client cannot pick a fresh IP per request.
      expect(remaining(yield* getFrom(url, "127.0.0.6", { "x-forwarded-for": "198.51.100.3" }))).toBe(99)
      expect(remaining(yield* getFrom(url, "127.0.0.6", { "x-forwarded-for": "198.51.100.4" }))).toBe(98)
    }).pipe(Effect.scoped), { timeout: 90_000 })
})
