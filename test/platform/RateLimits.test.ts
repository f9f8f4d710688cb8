import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { lease, leaseSize, windowStart } from "../../services/platform/RateWindow.ts"
import { adminToken, bootstrapOrg, request, startApp } from "../support/app.ts"

describe("request windows", () => {
  it("grant up to the limit, then nothing until the next minute", () => {
    const t0 = Date.UTC(2026, 10, 21, 10, 0, 30)
    let window = { start: 0, used: 0 }
    for (let i = 0; i < 50; i++) {
      const result = lease(window, t0, 50, 1)
      expect(result.granted).toBe(1)
      expect(result.remaining).toBe(49 - i)
      window = result.window
    }
    const spent = lease(window, t0 + 29_000, 50, 1)
    expect(spent).toMatchObject({ granted: 0, remaining: 0, reset: t0 / 1000 + 30 })
    const next = lease(spent.window, t0 + 30_000, 50, 1)
    expect(next).toMatchObject({ granted: 1, remaining: 49, reset: t0 / 1000 + 90 })
    expect(windowStart(t0 + 30_000)).toBe(t0 / 1000 + 30)
    expect(lease(window, t0, 50, 5).granted).toBe(0)
    expect(lease({ start: t0 / 1000 - 30, used: 48 }, t0, 50, 5).granted).toBe(2)
  })

  it("lease one request at a time for small quotas and 2% for large ones", () => {
    expect([50, 100, 300, 1000, 100_000].map(leaseSize)).toEqual([1, 2, 6, 20, 2000])
  })
})

describe("per-organization quota over HTTP", () => {
  it.live("a free organization's 51st request is 429 with the spec body and headers", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const { key } = yield* bootstrapOrg(app.baseUrl, { slug: "free-org" })
      // Stay clear of a minute boundary so all 51 requests share one window.
      const second = new Date().getUTCSeconds()
      if (second > 50) yield* Effect.sleep(`${61 - second} seconds`)
      const statuses: Array<number> = []
      let last = yield* request(`${app.baseUrl}/api/v1/me`, { token: key })
      statuses.push(last.status)
      expect(last.headers.get("x-ratelimit-limit")).toBe("50")
      expect(last.headers.get("x-ratelimit-remaining")).toBe("49")
      const reset = Number(last.headers.get("x-ratelimit-reset"))
      expect(reset % 60).toBe(0)
      expect(reset * 1000).toBeGreaterThan(Date.now())
      for (let i = 1; i < 50; i++) {
        last = yield* request(`${app.baseUrl}/api/v1/me`, { token: key })
        statuses.push(last.status)
      }
      expect(statuses.every((status) => status === 200)).toBe(true)
      expect(last.headers.get("x-ratelimit-remaining")).toBe("0")

      const limited = yield* request(`${app.baseUrl}/api/v1/me`, { token: key })
      expect(limited.status).toBe(429)
      expect(limited.body).toEqual({
        error: "rate_limited",
        message: expect.any(String),
        retryAfter: expect.any(Number)
      })
      const retryAfter = Number(limited.headers.get("retry-after"))
      expect(retryAfter).toBe(limited.body.retryAfter)
      expect(retryAfter).toBeGreaterThanOrEqual(1)
      expect(retryAfter).toBeLessThanOrEqual(60)
      expect(limited.headers.get("x-ratelimit-limit")).toBe("50")
      expect(limited.headers.get("x-ratelimit-remaining")).toBe("0")
      expect(limited.headers.get("x-ratelimit-reset")).toBe(String(reset))

      // Another organization has its own quota; the admin API is outside any quota.
      const other = yield* bootstrapOrg(app.baseUrl, { slug: "other-org" })
      expect((yield* request(`${app.baseUrl}/api/v1/me`, { token: other.key })).status).toBe(200)
      const quota = yield* request(`${app.baseUrl}/api/v1/admin/orgs/free-org/quota`, { token: adminToken })
      expect(quota.body).toMatchObject({ limit: 50, used: 50, remaining: 0, reset })

      // Upgrading takes effect at once.
      const upgraded = yield* request(`${app.baseUrl}/api/v1/admin/orgs/free-org`, {
        method: "PATCH",
        token: adminToken,
        body: { plan: "hobby" }
      })
      expect(upgraded.body.requestsPerMinute).toBe(100)
      const after = yield* request(`${app.baseUrl}/api/v1/me`, { token: key })
      expect(after.status).toBe(200)
      expect(after.headers.get("x-ratelimit-limit")).toBe("100")
      expect(Number(after.headers.get("x-ratelimit-remaining"))).toBeLessThan(50)
      // The window's reset at X-RateLimit-Reset is covered under the TestClock in RequestQuota.test.ts.
    }).pipe(Effect.scoped), { timeout: 90_000 })
})
