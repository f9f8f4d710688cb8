import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { lease, leaseSize, windowStart } from "../../services/ratelimits/RateWindow.ts"
import { adminToken, bootstrapOrg, request, startApp } from "../support/app.ts"
import { withinOneWindow } from "../support/oneWindow.ts"

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

/** One run of the quota test in a fresh organization; "window ended" if a minute ended during it. */
const quotaRun = (baseUrl: string, attempt: number) =>
  Effect.gen(function*() {
    const slug = `free-org-${attempt}`
    const { key } = yield* bootstrapOrg(baseUrl, { slug })
    const me = request(`${baseUrl}/api/v1/me`, { token: key })
    const responses = []
    const startedAt = Date.now()
    for (let i = 0; i < 51; i++) responses.push(yield* me)
    const reset = Number(responses[0].headers.get("x-ratelimit-reset"))
    if (responses.some((response) => Number(response.headers.get("x-ratelimit-reset")) !== reset)) {
      return "window ended" as const
    }
    const [first, limited] = [responses[0], responses[50]]
    expect(first.headers.get("x-ratelimit-limit")).toBe("50")
    expect(first.headers.get("x-ratelimit-remaining")).toBe("49")
    expect(reset % 60).toBe(0)
    expect(reset * 1000).toBeGreaterThan(startedAt)
    expect(responses.slice(0, 50).map((response) => response.status)).toEqual(Array(50).fill(200))
    expect(responses[49].headers.get("x-ratelimit-remaining")).toBe("0")

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

    // Another organization has its own quota; the admin API is outside any quota.
    const other = yield* bootstrapOrg(baseUrl, { slug: `other-org-${attempt}` })
    expect((yield* request(`${baseUrl}/api/v1/me`, { token: other.key })).status).toBe(200)
    const quota = yield* request(`${baseUrl}/api/v1/admin/orgs/${slug}/quota`, { token: adminToken })
    if (quota.body.reset !== reset) return "window ended" as const
    expect(quota.body).toMatchObject({ limit: 50, used: 50, remaining: 0, reset })

    // Upgrading takes effect at once.
    const upgraded = yield* request(`${baseUrl}/api/v1/admin/orgs/${slug}`, {
      method: "PATCH",
      token: adminToken,
      body: { plan: "hobby" }
    })
    expect(upgraded.body.requestsPerMinute).toBe(100)
    const after = yield* me
    if (Number(after.headers.get("x-ratelimit-reset")) !== reset) return "window ended" as const
    expect(after.status).toBe(200)
    expect(after.headers.get("x-ratelimit-limit")).toBe("100")
    expect(Number(after.headers.get("x-ratelimit-remaining"))).toBeLessThan(50)
    // The window's reset at X-RateLimit-Reset is covered under the TestClock in RequestQuota.test.ts.
    return "done" as const
  })

describe("per-organization quota over HTTP", () => {
  it.live("a free organization's 51st request is 429 with the spec body and headers", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      // All 51 requests must share one window: a run that a minute's end cut through goes again.
      yield* withinOneWindow((attempt) => quotaRun(app.baseUrl, attempt))
    }).pipe(Effect.scoped), { timeout: 90_000 })
})
