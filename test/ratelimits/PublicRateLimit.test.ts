import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Http from "node:http"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
import { withinOneWindow } from "../support/oneWindow.ts"

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

/** The X-RateLimit-Reset of a response from either client. */
const resetOf = (response: { headers: Headers | Http.IncomingHttpHeaders }) =>
  Number(
    response.headers instanceof Headers
      ? response.headers.get("x-ratelimit-reset")
      : response.headers["x-ratelimit-reset"]
  )

/**
 * One run of the per-IP test in a fresh organization, from client addresses of its own
 * (127.0.<attempt>.x: a first run's requests may count in the second run's window); "window
 * ended" if a minute ended during it.
 */
const perIpRun = (baseUrl: string, attempt: number) =>
  Effect.gen(function*() {
    const slug = `public-org-${attempt}`
    const client = (n: number) => `127.0.${attempt}.${n}`
    const { key } = yield* bootstrapOrg(baseUrl, { slug })
    const url = `${baseUrl}/api/v1/status/${slug}`
    const publicResponses = []
    for (let i = 0; i < 101; i++) publicResponses.push(yield* getFrom(url, client(1)))
    const reset = resetOf(publicResponses[0])
    const sameWindow = (...responses: ReadonlyArray<Parameters<typeof resetOf>[0]>) =>
      responses.every((response) => resetOf(response) === reset)
    if (!sameWindow(...publicResponses)) return "window ended" as const

    const [first, limited] = [publicResponses[0], publicResponses[100]]
    expect(first.status).toBe(200)
    expect(first.body).toMatchObject({ overallStatus: "operational", monitors: { total: 0 }, activeIncidents: 0 })
    expect(first.headers["x-ratelimit-limit"]).toBe("100")
    expect(first.headers["x-ratelimit-remaining"]).toBe("99")
    expect(publicResponses.slice(0, 100).map((response) => response.status)).toEqual(Array(100).fill(200))
    expect(limited.status).toBe(429)
    expect(limited.body).toEqual({
      error: "rate_limited",
      message: expect.any(String),
      retryAfter: expect.any(Number)
    })
    expect(Number(limited.headers["retry-after"])).toBe(limited.body.retryAfter)

    // The key's quota was not touched by 101 public requests...
    const me = yield* request(`${baseUrl}/api/v1/me`, { token: key })
    // ...and another client IP has its own public allowance.
    const other = yield* getFrom(url, client(2))
    if (!sameWindow(me, other)) return "window ended" as const
    expect(me.status).toBe(200)
    expect(me.headers.get("x-ratelimit-remaining")).toBe("49")
    expect(other.status).toBe(200)
    expect(other.headers["x-ratelimit-remaining"]).toBe("99")

    // Spending the key quota leaves the public endpoint alone for other clients.
    for (let i = 0; i < 49; i++) yield* request(`${baseUrl}/api/v1/me`, { token: key })
    const spent = yield* request(`${baseUrl}/api/v1/me`, { token: key })
    if (!sameWindow(spent)) return "window ended" as const
    expect(spent.status).toBe(429)
    expect((yield* getFrom(url, client(3))).status).toBe(200)

    const unknown = yield* getFrom(`${baseUrl}/api/v1/status/nobody-here`, client(4))
    expect(unknown.status).toBe(404)
    expect(unknown.body.error).toBe("not_found")
    return "done" as const
  })

/** One run of the trusted-proxy test; "window ended" if a minute ended during it. */
const proxiedRun = (baseUrl: string, attempt: number) =>
  Effect.gen(function*() {
    const slug = `proxied-${attempt}`
    yield* bootstrapOrg(baseUrl, { slug })
    const url = `${baseUrl}/api/v1/status/${slug}`
    // Client and untrusted peer addresses of its own per run (see perIpRun).
    const client = (n: number) => `198.51.${100 + attempt}.${n}`
    const untrustedPeer = `127.0.${attempt}.6`
    const responses = [
      // Through the trusted proxy, each forwarded client has its own allowance; trusted hops are skipped.
      yield* getFrom(url, "127.0.0.5", { "x-forwarded-for": client(1) }),
      yield* getFrom(url, "127.0.0.5", { "x-forwarded-for": `${client(1)}, 10.1.2.3` }),
      yield* getFrom(url, "127.0.0.5", { "x-forwarded-for": client(2) }),
      // From an untrusted peer the header is ignored: a client cannot pick a fresh IP per request.
      yield* getFrom(url, untrustedPeer, { "x-forwarded-for": client(3) }),
      yield* getFrom(url, untrustedPeer, { "x-forwarded-for": client(4) })
    ]
    if (responses.some((response) => resetOf(response) !== resetOf(responses[0]))) return "window ended" as const
    expect(responses.map((response) => Number(response.headers["x-ratelimit-remaining"]))).toEqual([99, 98, 99, 99, 98])
    return "done" as const
  })

describe("public endpoints", () => {
  it.live("are limited per client IP, apart from the organization's key quota", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      yield* withinOneWindow((attempt) => perIpRun(app.baseUrl, attempt))
    }).pipe(Effect.scoped), { timeout: 90_000 })

  it.live("honour X-Forwarded-For only from a proxy listed in TRUSTED_PROXIES", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ trustedProxies: ["127.0.0.5", "10.0.0.0/8"] })
      yield* withinOneWindow((attempt) => proxiedRun(app.baseUrl, attempt))
    }).pipe(Effect.scoped), { timeout: 90_000 })
})
