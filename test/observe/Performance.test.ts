import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Sketch from "../../services/observe/LatencySketch.ts"
import { Performance, type SpanInput } from "../../services/observe/Performance.ts"
import { bootstrapOrg, request, startApp } from "../support/app.ts"

/** One app (fresh database) for the whole file; spans are written through the service. */
class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly sql: SqlClient.SqlClient
  readonly performance: Performance["Service"]
}>()("test/observe/PerformanceApp") {}

const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(startApp(), (app) => ({
    baseUrl: app.baseUrl,
    sql: app.sql,
    performance: Context.get(app.context as Context.Context<Performance>, Performance)
  }))
)

let orgCounter = 0
const newOrg = (scopes?: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestApp
    const slug = `perf-${process.pid}-${++orgCounter}`
    return yield* bootstrapOrg(baseUrl, { slug, plan: "enterprise", ...(scopes ? { scopes } : {}) })
  })

/** A deterministic pseudo-random stream (mulberry32), so the span sets are known. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

/** Long-tailed latencies (log-normal around ~80 ms) spread over the hours of `day`. */
const spanSet = (
  count: number,
  options: { day: string; name: string; release?: string; environment?: string; errorEvery: number; seed: number }
): Array<SpanInput> => {
  const next = random(options.seed)
  return Array.from({ length: count }, (_, i) => {
    const gaussian = Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next())
    return {
      traceId: `trace-${options.seed}-${Math.floor(i / 4)}`,
      spanId: `span-${options.seed}-${i}`,
      ...(i % 4 === 0 ? {} : { parentId: `span-${options.seed}-${i - (i % 4)}` }),
      name: options.name,
      durationMs: Math.exp(4.4 + 0.9 * gaussian),
      status: i % options.errorEvery === 0 ? "error" as const : "ok" as const,
      timestamp: new Date(Date.parse(`${options.day}T00:00:00.000Z`) + Math.floor(next() * 86_400_000)),
      release: options.release,
      environment: options.environment
    }
  })
}

/** Records spans in transactions of `batch`, several at once (as concurrent group commits would). */
const record = (orgId: string, spans: ReadonlyArray<SpanInput>, batch: number) =>
  Effect.gen(function*() {
    const { performance, sql } = yield* TestApp
    const batches = Array.from({ length: Math.ceil(spans.length / batch) }, (_, i) =>
      spans.slice(i * batch, (i + 1) * batch))
    yield* Effect.forEach(
      batches,
      (chunk) =>
        sql.withTransaction(performance.recordSpans(orgId, chunk)),
      { concurrency: 4, discard: true }
    ).pipe(Effect.provideService(SqlClient.SqlClient, sql))
  })

const exactStats = (spans: ReadonlyArray<SpanInput>) => {
  const sorted = spans.map((span) => span.durationMs).sort((a, b) => a - b)
  return {
    total: spans.length,
    avg: sorted.reduce((sum, value) => sum + value, 0) / spans.length,
    p95: sorted[Math.ceil(0.95 * sorted.length) - 1],
    errorRate: spans.filter((span) => span.status === "error").length / spans.length
  }
}

const stats = (token: string, query: string) =>
  Effect.flatMap(TestApp, ({ baseUrl }) => request(`${baseUrl}/api/v1/stats/performance?${query}`, { token }))

/** Expects the endpoint's figures to be those of `spans`: exact counts and average, p95 within 1%. */
const expectStatsOf = (body: any, spans: ReadonlyArray<SpanInput>) => {
  const exact = exactStats(spans)
  expect(body.totalSpans).toBe(exact.total)
  expect(Math.abs(body.avgLatency - exact.avg)).toBeLessThan(1e-9 * exact.avg)
  expect(Math.abs(body.p95Latency - exact.p95), `p95 ${body.p95Latency} vs ${exact.p95}`).toBeLessThanOrEqual(
    0.01 * exact.p95
  )
  expect(body.errorRate).toBeCloseTo(exact.errorRate, 12)
}

layer(TestAppLive, { excludeTestServices: true, timeout: "120 seconds" })("Performance statistics", (it) => {
  it.effect("serves exact totals, average and error rate, p95 within 1%, per UTC day and per filter", () =>
    Effect.gen(function*() {
      const { key, org } = yield* newOrg()
      const checkout = spanSet(3000, {
        day: "2026-11-01",
        name: "GET /checkout",
        release: "1.0.0",
        environment: "production",
        errorEvery: 20,
        seed: 1
      })
      const cart = spanSet(1200, { day: "2026-11-02", name: "GET /cart", release: "1.1.0", errorEvery: 8, seed: 2 })
      const lateCheckout = spanSet(800, {
        day: "2026-11-02",
        name: "GET /checkout",
        release: "1.1.0",
        environment: "production",
        errorEvery: 5,
        seed: 3
      })
      yield* record(org.id, [...checkout, ...cart, ...lateCheckout], 250)
      const { sql } = yield* TestApp
      const [stored] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM spans WHERE org_id = ${org.id}`
      expect(stored.n).toBe(5000)
      const window = "from=2026-11-01T00:00:00.000Z&to=2026-11-02T23:59:59.999Z"
      const all = yield* stats(key, window)
      expect(all.status, JSON.stringify(all.body)).toBe(200)
      expectStatsOf(all.body, [...checkout, ...cart, ...lateCheckout])
      expect(all.body.latencyHistory.map((day: { date: string; count: number }) => [day.date, day.count])).toEqual([
        ["2026-11-01", 3000],
        ["2026-11-02", 2000]
      ])
      const [first, second] = all.body.latencyHistory
      const firstExact = exactStats(checkout)
      const secondExact = exactStats([...cart, ...lateCheckout])
      expect(first.avg).toBeCloseTo(firstExact.avg, 6)
      expect(Math.abs(first.p95 - firstExact.p95)).toBeLessThanOrEqual(0.01 * firstExact.p95)
      expect(second.avg).toBeCloseTo(secondExact.avg, 6)
      expect(Math.abs(second.p95 - secondExact.p95)).toBeLessThanOrEqual(0.01 * secondExact.p95)

      expectStatsOf((yield* stats(key, `${window}&name=${encodeURIComponent("GET /checkout")}`)).body, [
        ...checkout,
        ...lateCheckout
      ])
      expectStatsOf((yield* stats(key, `${window}&release=1.1.0`)).body, [...cart, ...lateCheckout])
      expectStatsOf((yield* stats(key, `${window}&environment=production&release=1.1.0`)).body, lateCheckout)
      expectStatsOf((yield* stats(key, "from=2026-11-02T00:00:00Z&to=2026-11-02T23:59:59Z")).body, [
        ...cart,
        ...lateCheckout
      ])
      // A window starting mid-day: edge hours from the hourly rollups, whole days from the daily ones.
      const noon = Date.parse("2026-11-01T12:00:00.000Z")
      const fromNoon = yield* stats(key, "from=2026-11-01T12:34:56.000Z&to=2026-11-02T23:59:59.999Z")
      expectStatsOf(
        fromNoon.body,
        [...checkout, ...cart, ...lateCheckout].filter((span) => span.timestamp.getTime() >= noon)
      )
      expect(fromNoon.body.latencyHistory.map((day: { date: string }) => day.date)).toEqual([
        "2026-11-01",
        "2026-11-02"
      ])

      const none = yield* stats(key, `${window}&name=nothing`)
      expect(none.body).toMatchObject({ totalSpans: 0, avgLatency: 0, p95Latency: 0, errorRate: 0 })
      expect(none.body.latencyHistory).toEqual([
        { date: "2026-11-01", avg: 0, p95: 0, count: 0 },
        { date: "2026-11-02", avg: 0, p95: 0, count: 0 }
      ])

      // Another organization sees none of it.
      const other = yield* newOrg()
      expect((yield* stats(other.key, window)).body.totalSpans).toBe(0)

      // Both days have closed, so statistics folded them into daily rollups; late spans for
      // a folded day still count, through the hourly and the daily rows.
      const [folded] = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM span_days_compacted WHERE org_id = ${org.id}`
      expect(folded.n).toBe(2)
      const late = spanSet(300, { day: "2026-11-01", name: "GET /cart", errorEvery: 3, seed: 6 })
      yield* record(org.id, late, 100)
      const everything = [...checkout, ...cart, ...lateCheckout, ...late]
      expectStatsOf((yield* stats(key, window)).body, everything)
      expectStatsOf(
        (yield* stats(key, "from=2026-11-01T00:00:00Z&to=2026-11-01T05:59:59Z")).body,
        everything
          .filter((span) => span.timestamp.getTime() < Date.parse("2026-11-01T06:00:00Z"))
      )

      // Every rollup's sketch, merged batch after batch by concurrent transactions, holds every span.
      for (const table of ["span_rollups_hourly", "span_rollups_daily"]) {
        const rollups = yield* sql<{ spans: string; sketch: Sketch.LatencySketch }>`
          SELECT span_count::text AS spans, sketch FROM ${sql(table)} WHERE org_id = ${org.id}`
        expect(rollups.length).toBeGreaterThan(0)
        for (const rollup of rollups) expect(Sketch.count(rollup.sketch)).toBe(Number(rollup.spans))
        expect(rollups.reduce((sum, rollup) => sum + Number(rollup.spans), 0)).toBe(everything.length)
      }
    }))

  it.effect("defaults to the last seven days", () =>
    Effect.gen(function*() {
      const { key, org } = yield* newOrg()
      const now = Date.now()
      const recent = spanSet(50, { day: "2026-01-01", name: "job", errorEvery: 2, seed: 4 })
        .map((span, i) => ({ ...span, timestamp: new Date(now - (i + 1) * 3_600_000) }))
      const old = spanSet(10, { day: "2026-01-01", name: "job", errorEvery: 2, seed: 5 })
        .map((span) => ({ ...span, timestamp: new Date(now - 9 * 86_400_000) }))
      yield* record(org.id, [...recent, ...old], 100)
      const response = yield* stats(key, "")
      expect(response.status).toBe(200)
      expectStatsOf(response.body, recent)
      expect(response.body.latencyHistory.length).toBeGreaterThanOrEqual(7)
    }))

  it.effect("validates the query and needs status:read", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg()
      for (
        const query of [
          "from=yesterday",
          "to=2026-13-01T00:00:00Z",
          "from=2026-02-30",
          "from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z",
          "from=2024-01-01T00:00:00Z&to=2026-01-01T00:00:00Z",
          "from=2000-01-01T00:00:00Z",
          "name="
        ]
      ) {
        const response = yield* stats(key, query)
        expect(response.status, query).toBe(400)
        expect(response.body.error, query).toBe("validation_error")
        expect(response.body.details.length, query).toBeGreaterThan(0)
      }
      const observer = yield* newOrg(["observe:read"])
      const forbidden = yield* stats(observer.key, "")
      expect(forbidden.status).toBe(403)
      expect(forbidden.body.error).toBe("forbidden")
      expect((yield* stats("nope", "")).status).toBe(401)
    }))
})
