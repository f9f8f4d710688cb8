import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { bootstrapOrg, request } from "../support/app.ts"
import { errorEvent, ingest, startWithIngestClock } from "./support.ts"

/**
 * Sampling through the real endpoint and entity. The ingest stream samples by an
 * injected clock, held inside one minute and then moved to the next one, so the test
 * needs no real waiting and cannot straddle a minute boundary.
 */
const minuteStart = Date.UTC(2026, 10, 23, 10, 0, 0)
let now = minuteStart + 5_000

describe("sampling through the ingest endpoint", () => {
  it.live(
    "a free organization far over 100 events a minute gets only 2xx; about 100 are stored, all are counted",
    () =>
      Effect.gen(function*() {
        const { baseUrl, sql } = yield* startWithIngestClock({ now: () => now })
        const { key, org } = yield* bootstrapOrg(baseUrl, { slug: "sampled", plan: "free" })
        const stored = sql<{ n: number; weights: Array<number> }>`
        SELECT count(*)::int AS n, coalesce(array_agg(DISTINCT sample_weight), '{}') AS weights
        FROM observe_events WHERE org_id = ${org.id}`.pipe(Effect.map((rows) => rows[0]), Effect.orDie)

        // Minute 1: 250 events of one issue in batches of 50, then 10 new issues.
        const statuses: Array<number> = []
        let last: { headers: Headers } | undefined
        for (let batch = 0; batch < 5; batch++) {
          const response = yield* ingest(baseUrl, { events: Array.from({ length: 50 }, () => errorEvent({})) }, {
            token: key
          })
          statuses.push(response.status)
          last = response
        }
        expect(last!.headers.get("x-ratelimit-limit")).toBe("100")
        expect(last!.headers.get("x-ratelimit-remaining")).toBe("0")
        expect(last!.headers.get("x-ratelimit-reset")).toBe(String(minuteStart / 1000 + 60))
        for (let i = 0; i < 10; i++) {
          const response = yield* ingest(baseUrl, errorEvent({ type: `NewError${i}` }), { token: key })
          statuses.push(response.status)
        }
        expect(statuses.every((status) => status === 202)).toBe(true)

        // The first 100 kept, plus the first event of each new fingerprint.
        const first = yield* stored
        expect(first.n).toBe(110)
        expect(first.weights).toEqual([1])
        const issues = yield* request(`${baseUrl}/api/v1/observe/issues?sort=count&limit=100`, { token: key })
        expect(issues.body.count).toBe(11)
        expect(issues.body.issues[0].count).toBe(250)
        expect(issues.body.issues.slice(1).map((issue: any) => issue.count)).toEqual(Array(10).fill(1))

        // Minute 2, still overloaded: about 100 kept, spread over the minute, each standing for several.
        now = minuteStart + 65_000
        for (let batch = 0; batch < 6; batch++) {
          const response = yield* ingest(baseUrl, { events: Array.from({ length: 50 }, () => errorEvent({})) }, {
            token: key
          })
          expect(response.status).toBe(202)
        }
        const second = yield* stored
        expect(second.n - first.n).toBeGreaterThan(40)
        expect(second.n - first.n).toBeLessThanOrEqual(100)
        expect(Math.min(...second.weights.filter((weight) => weight !== 1))).toBeGreaterThan(2)
        const top = yield* request(`${baseUrl}/api/v1/observe/issues?sort=count&limit=1`, { token: key })
        expect(top.body.issues[0].count).toBe(550)
      }).pipe(Effect.scoped),
    { timeout: 120_000 }
  )
})
