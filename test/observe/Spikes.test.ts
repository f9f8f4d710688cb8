import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { SpikeDetector, spikeRule } from "../../services/observe/Spikes.ts"
import { bootstrapOrg, request } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { errorEvent, ingest, startWithIngestClock } from "./support.ts"

const minute = 60_000
const t0 = Date.UTC(2026, 10, 23, 9, 0, 0)

describe("spike detection (pure)", () => {
  it("opens above max(3 × baseline, floor), alerts once per spike, again only after the cooldown", () => {
    const detector = new SpikeDetector()
    // A steady hour of 15 events per minute: 75 per 5 minutes (under the floor), never a spike.
    for (let m = -5; m < 60; m++) {
      detector.record("org", t0 + m * minute, 15)
      expect(detector.evaluate(["org"], t0 + m * minute)).toEqual([])
    }
    // 300 in a minute: 5-minute count 360 > max(3 × 75, 100).
    detector.record("org", t0 + 60 * minute, 300)
    const [spike] = detector.evaluate(["org"], t0 + 60 * minute)
    expect(spike).toMatchObject({ subject: "org", count: 360, baseline: 75, threshold: 225 })
    // Still spiking: the same spike, no second alert.
    detector.record("org", t0 + 61 * minute, 700)
    expect(detector.evaluate(["org"], t0 + 61 * minute)).toEqual([])
    // Calm again, then a new spike inside the cooldown: no alert; after it: an alert.
    detector.record("org", t0 + 70 * minute, 1)
    expect(detector.evaluate(["org"], t0 + 70 * minute)).toEqual([])
    detector.record("org", t0 + 75 * minute, 5000)
    expect(detector.evaluate(["org"], t0 + 75 * minute)).toEqual([])
    detector.record("org", t0 + 95 * minute, 1)
    detector.evaluate(["org"], t0 + 95 * minute)
    detector.record("org", t0 + 96 * minute, 5000)
    expect(detector.evaluate(["org"], t0 + 96 * minute).length).toBe(1)
  })

  it("a quiet subject needs the floor", () => {
    const detector = new SpikeDetector()
    detector.record("iss_1", t0, spikeRule.floor.issue)
    expect(detector.evaluate(["iss_1"], t0)).toEqual([])
    detector.record("iss_1", t0, 1)
    expect(detector.evaluate(["iss_1"], t0).length).toBe(1)
  })
})

describe("spike alerts through ingestion", () => {
  it.live(
    "a burst opens one organization and one issue alert, published, listed and mailed to owners",
    () =>
      Effect.gen(function*() {
        let now = t0 + 5_000
        const { baseUrl, sql, config } = yield* startWithIngestClock({ now: () => now })
        const { key, org } = yield* bootstrapOrg(baseUrl, { slug: "spiky", plan: "enterprise" })
        const burst = (n: number, type = "TypeError") =>
          ingest(baseUrl, { events: Array.from({ length: n }, () => errorEvent({ type })) }, { token: key })

        yield* burst(30, "RangeError")
        yield* burst(150)
        const alerts = () => request(`${baseUrl}/api/v1/observe/alerts`, { token: key })
        const first = yield* alerts()
        expect(first.body.count).toBe(2)
        const issues = yield* request(`${baseUrl}/api/v1/observe/issues?sort=count`, { token: key })
        expect(first.body.alerts.map((alert: any) => [alert.scope, alert.issueId, alert.count]).sort()).toEqual([
          ["issue", issues.body.issues[0].id, 150],
          ["organization", null, 180]
        ])

        // The same spike goes on a minute later: no new alert.
        now += minute
        yield* burst(150)
        expect((yield* alerts()).body.count).toBe(2)

        // 40 minutes later (past the cooldown), calm, then a new burst well above the hour's baseline.
        now += 40 * minute
        yield* burst(1)
        now += minute
        yield* burst(300)
        expect((yield* alerts()).body.count).toBe(4)

        const published = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM domain_events WHERE type = 'observe.spike' AND org_id = ${org.id}`
        expect(published[0].n).toBe(4)
        // The owners get an e-mail per alert (the outbox folder of the test's mailer).
        const outbox = Path.join(config.dataDir, "outbox")
        const mails = yield* eventually(
          "spike e-mails",
          Effect.sync(() =>
            Fs.existsSync(outbox) ? Fs.readdirSync(outbox).filter((name) => name.endsWith(".eml")) : []
          ),
          (files) => files.length >= 4,
          { timeoutMs: 60_000 }
        )
        const text = Fs.readFileSync(Path.join(outbox, mails[0]), "utf8")
        expect(text).toContain("spiky-owner@example.com")
        expect(text).toMatch(/Error spike/)
        // Another organization sees none of them.
        const other = yield* bootstrapOrg(baseUrl, { slug: "calm", plan: "enterprise" })
        expect((yield* request(`${baseUrl}/api/v1/observe/alerts`, { token: other.key })).body.count).toBe(0)
      }).pipe(Effect.scoped),
    { timeout: 120_000 }
  )
})
