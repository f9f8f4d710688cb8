import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { bootstrapOrg, request, startApp, startAppOnDatabase } from "../support/app.ts"
import { createTestDatabase } from "../support/database.ts"
import { eventually } from "../support/wait.ts"
import { claimTime } from "./claimTime.ts"
import { startReceiver } from "./receiver.ts"

/**
 * Real time, real app, real receivers: failures and retries, the timeout, the SSRF guard,
 * and restarts between and during attempts.
 */

type Api = (path: string, init?: { method?: string; body?: unknown }) => ReturnType<typeof request>

const setUp = (baseUrl: string, slug: string) =>
  // Enterprise: the polling below stays well inside the plan's request quota.
  Effect.map(bootstrapOrg(baseUrl, { slug, plan: "enterprise" }), ({ key }): Api => (path, init) =>
    request(`${baseUrl}/api/v1/webhooks${path}`, { ...init, token: key }))

const createHook = (api: Api, body: Record<string, unknown>) =>
  Effect.map(api("", { method: "POST", body: { events: ["*"], ...body } }), (response) => {
    if (response.status !== 201) throw new Error(`create: ${response.status} ${JSON.stringify(response.body)}`)
    return response.body.id as string
  })

const deliveryOf = (api: Api, hookId: string, done: (delivery: any) => boolean) =>
  Effect.map(
    eventually(
      "the delivery",
      api(`/${hookId}/deliveries`),
      (response) => response.body.deliveries?.[0] !== undefined && done(response.body.deliveries[0]),
      { pollMs: 250 }
    ),
    (response) => response.body.deliveries[0]
  ).pipe(Effect.flatMap((delivery) => Effect.map(api(`/${hookId}/deliveries/${delivery.id}`), (r) => r.body)))

/** A temporary data folder shared by two app lifetimes (the master key must survive the restart). */
const sharedDataDir = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-webhooks-"))),
  (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
)

// Concurrent: three of these wait out a real 10 s retry interval, each with an app of its own.
describe.concurrent("webhook delivery", () => {
  it.live(
    "retries a receiver that fails once, after retryIntervalSeconds, with the same delivery id",
    () =>
      Effect.gen(function*() {
        const receiver = yield* startReceiver((_, index) => index === 0 ? 503 : 200)
        const app = yield* startApp()
        const api = yield* setUp(app.baseUrl, "retry")
        const hookId = yield* createHook(api, { url: receiver.url(), retryIntervalSeconds: 10 })
        expect((yield* api(`/${hookId}/test`, { method: "POST" })).status).toBe(202)

        // Attempt 2 is due retryIntervalSeconds × 1 after attempt 1 was claimed, just before it started.
        const retrying = yield* deliveryOf(api, hookId, (d) => d.status === "pending" && d.responseCode === 503)
        const retryAt = Date.parse(retrying.nextAttemptAt)
        const firstStarted = Date.parse(retrying.attempts[0].startedAt)
        expect(retryAt - firstStarted).toBeLessThanOrEqual(10_000)
        expect(retryAt - firstStarted).toBeGreaterThan(8_000)

        const delivery = yield* deliveryOf(api, hookId, (d) => d.status === "success")
        expect(delivery).toMatchObject({ status: "success", attempt: 2, responseCode: 200 })
        expect(delivery.attempts.map((a: any) => [a.attempt, a.response?.statusCode, a.error])).toEqual([
          [1, 503, "receiver answered 503"],
          [2, 200, null]
        ])
        expect(receiver.received).toHaveLength(2)
        const [first, second] = receiver.received
        expect(second.headers["x-service-delivery"]).toBe(first.headers["x-service-delivery"])
        // Not before it was due.
        expect(Date.parse(delivery.attempts[1].startedAt)).toBeGreaterThanOrEqual(retryAt)
        expect(second.at).toBeGreaterThanOrEqual(retryAt)
        const listed = (yield* api("")).body.webhooks[0]
        expect(listed).toMatchObject({ deliveryCount: 1, failureCount: 0 })
      }),
    60_000
  )

  it.live(
    "a hanging receiver times out (shortened timeout), the attempt is logged and the delivery fails",
    () =>
      Effect.gen(function*() {
        const receiver = yield* startReceiver(() => "hang")
        const app = yield* startApp({ webhookTimeoutMs: 500 })
        const api = yield* setUp(app.baseUrl, "hang")
        const hookId = yield* createHook(api, { url: receiver.url(), maxRetries: 0 })
        yield* api(`/${hookId}/test`, { method: "POST" })
        const delivery = yield* deliveryOf(api, hookId, (d) => d.status !== "pending")
        expect(delivery).toMatchObject({ status: "failed", attempt: 1, responseCode: null })
        expect(delivery.attempts).toHaveLength(1)
        expect(delivery.attempts[0].error).toBe("timed out after 500 ms")
        expect(delivery.attempts[0].response).toBeNull()
        expect(delivery.attempts[0].durationMs).toBeGreaterThanOrEqual(450)
        expect(receiver.received).toHaveLength(1)
        expect((yield* api("")).body.webhooks[0]).toMatchObject({ deliveryCount: 1, failureCount: 1 })
      }),
    60_000
  )

  it.live(
    "refuses a private address without OUTBOUND_ALLOW_PRIVATE: nothing reaches the receiver",
    () =>
      Effect.gen(function*() {
        const receiver = yield* startReceiver()
        const app = yield* startApp({ outboundAllowPrivate: false })
        const api = yield* setUp(app.baseUrl, "ssrf")
        // http:// is refused outright when private targets are not allowed.
        const plain = yield* api("", { method: "POST", body: { url: receiver.url(), events: ["*"] } })
        expect(plain.status).toBe(400)
        const hookId = yield* createHook(api, { url: `https://127.0.0.1:${receiver.port}/hook`, maxRetries: 0 })
        yield* api(`/${hookId}/test`, { method: "POST" })
        const delivery = yield* deliveryOf(api, hookId, (d) => d.status !== "pending")
        expect(delivery.status).toBe("failed")
        expect(delivery.attempts[0].error).toMatch(/loopback/)
        expect(receiver.received).toHaveLength(0)
      }),
    60_000
  )

  it.live("a restart between attempts still delivers exactly once more", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver((_, index) => index === 0 ? 500 : 200)
      const databaseUrl = yield* createTestDatabase
      const dataDir = yield* sharedDataDir
      const first = yield* startAppOnDatabase(databaseUrl, { dataDir })
      const api = yield* setUp(first.baseUrl, "restart")
      const hookId = yield* createHook(api, { url: receiver.url(), secret: "kept", retryIntervalSeconds: 10 })
      yield* api(`/${hookId}/test`, { method: "POST" })
      yield* deliveryOf(api, hookId, (d) => d.attempt === 1 && d.responseCode === 500)
      yield* first.stop

      const second = yield* startAppOnDatabase(databaseUrl, { dataDir })
      const rows = yield* eventually(
        "the retry after the restart",
        second.sql<{ status: string; attempts: number }>`
          SELECT status, attempts FROM webhook_deliveries WHERE webhook_id = ${hookId}`,
        (rows) => rows[0]?.status === "success"
      )
      expect(rows[0].attempts).toBe(2)
      expect(receiver.received).toHaveLength(2)
      // The secret survived the restart (same master key): the retry is signed.
      expect(receiver.received[1].headers["x-service-signature"]).toMatch(/^sha256=/)
    }), 60_000)

  it.live("a restart during an attempt neither repeats that attempt nor loses the retry", () =>
    Effect.gen(function*() {
      // The first request never gets an answer: the runner stops while waiting for it.
      const receiver = yield* startReceiver((_, index) => index === 0 ? "hang" : 200)
      const databaseUrl = yield* createTestDatabase
      const dataDir = yield* sharedDataDir
      const first = yield* startAppOnDatabase(databaseUrl, { dataDir })
      const api = yield* setUp(first.baseUrl, "midflight")
      const hookId = yield* createHook(api, { url: receiver.url(), retryIntervalSeconds: 10 })
      yield* api(`/${hookId}/test`, { method: "POST" })
      yield* eventually("the first attempt in flight", Effect.sync(() => receiver.received.length), (n) => n === 1)
      const claimedAt = yield* claimTime(first.sql, hookId)
      yield* first.stop

      const second = yield* startAppOnDatabase(databaseUrl, { dataDir })
      const rows = yield* eventually(
        "the retry after the restart",
        second.sql<{ status: string; attempts: number; seq: string }>`
          SELECT status, attempts, seq FROM webhook_deliveries WHERE webhook_id = ${hookId}`,
        (rows) => rows[0]?.status === "success"
      )
      expect(rows[0].attempts).toBe(2)
      expect(receiver.received).toHaveLength(2)
      // Its outcome unknown, attempt 1's claim lapses retryIntervalSeconds × 1 after it was taken.
      expect(receiver.received[1].at).toBeGreaterThanOrEqual(claimedAt + 10_000)
      // Attempt 1's outcome is unknown (no row); attempt 2 is logged once.
      const attempts = yield* second.sql<{ attempt: number }>`
        SELECT attempt FROM webhook_attempts WHERE delivery_seq = ${rows[0].seq}`
      expect(attempts.map((row) => row.attempt)).toEqual([2])
    }), 60_000)
})
