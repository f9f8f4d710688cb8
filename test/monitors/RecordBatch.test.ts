import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { Events } from "../../services/events/Events.ts"
import { CheckRecorder } from "../../services/monitors/CheckRecorder.ts"
import { AppConfig } from "../../services/platform/AppConfig.ts"
import { testConfig } from "../support/app.ts"
import { TestDatabase } from "../support/database.ts"
import { tempDir } from "../support/tempDir.ts"

/**
 * Check attempts that finish together are written together (`GroupCommit`, `RecordBatch`):
 * fewer transactions than attempts, and per attempt the same rows as one written alone —
 * heartbeat, status, uptime and events only for a new heartbeat, nothing for an inactive
 * monitor. Claims due together share one statement and still take each slot once.
 */

const ORG = "org_batch"
const SLOT = Date.UTC(2026, 10, 1, 12, 0, 0)

const setupMonitors = (count: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`INSERT INTO organizations (id, slug, name, plan) VALUES (${ORG}, 'batch', 'Batch', 'free')
      ON CONFLICT DO NOTHING`
    const ids = Array.from({ length: count }, (_, i) => `mon_batch_${crypto.randomUUID().slice(0, 8)}_${i}`)
    for (const id of ids) {
      yield* sql`
        INSERT INTO monitors (id, org_id, name, url, status, status_since, next_check_at, retries)
        VALUES (${id}, ${ORG}, ${id}, 'http://127.0.0.1:9/', 'up', ${new Date(SLOT - 60_000)}, ${new Date(SLOT)}, 0)`
    }
    return ids
  })

const TestLayer = CheckRecorder.layer.pipe(
  Layer.provideMerge(Events.layer),
  Layer.provideMerge(TestDatabase),
  Layer.provideMerge(Layer.unwrap(Effect.map(
    tempDir("canopy-batch-"),
    (dataDir) => AppConfig.layerWith(testConfig("postgres://unused", { region: "batch", dataDir }))
  )))
)

layer(TestLayer, { excludeTestServices: true, timeout: 60_000 })("CheckRecorder group commit", (it) => {
  it.effect("attempts recorded at once share transactions and write what each would alone", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const recorder = yield* CheckRecorder
      const ids = yield* setupMonitors(30)
      const paused = ids[29]
      yield* sql`UPDATE monitors SET active = false, status = 'paused' WHERE id = ${paused}`
      const checkedAt = SLOT + 250
      const outcomes = yield* Effect.forEach(ids, (monitorId, i) =>
        recorder.record({
          monitorId,
          slotAt: SLOT,
          attempt: 0,
          checkedAt,
          // Every third one fails: down at once (retries 0), with a monitor.status event.
          result: i % 3 === 0
            ? { status: "down", responseTimeMs: 12, error: "refused" }
            : { status: "up", responseTimeMs: 12, statusCode: 200 }
        }), { concurrency: "unbounded" })
      expect(outcomes.slice(0, 29).every((outcome) => outcome._tag === "Recorded")).toBe(true)
      expect(outcomes[29]).toEqual({ _tag: "Skipped", reason: "inactive" })
      expect(outcomes[3]).toMatchObject({ _tag: "Recorded", status: "down" })

      const beats = yield* sql<{ monitorId: string; status: string; region: string }>`
        SELECT monitor_id AS "monitorId", status, region FROM heartbeats WHERE monitor_id IN ${sql.in(ids)}`
      expect(beats.length).toBe(29)
      expect(beats.every((beat) => beat.region === "batch")).toBe(true)
      const rows = yield* sql<{ id: string; status: string; failures: number; lastCheckedAt: Date }>`
        SELECT id, status, consecutive_failures AS failures, last_checked_at AS "lastCheckedAt"
        FROM monitors WHERE id IN ${sql.in(ids)}`
      const byId = new Map(rows.map((row) => [row.id, row]))
      ids.slice(0, 29).forEach((id, i) => {
        expect(byId.get(id)).toMatchObject({ status: i % 3 === 0 ? "down" : "up", failures: i % 3 === 0 ? 1 : 0 })
        expect(byId.get(id)!.lastCheckedAt.getTime()).toBe(checkedAt)
      })
      expect(byId.get(paused)).toMatchObject({ status: "paused" })
      // The minute up since status_since, and the attempt counted, in the uptime rollup.
      const uptime = yield* sql<{ upMs: number; checks: number; failed: number }>`
        SELECT sum(up_ms)::float8 AS "upMs", sum(checks)::int AS checks, sum(failed_checks)::int AS failed
        FROM monitor_uptime_hourly WHERE monitor_id IN ${sql.in(ids)}`
      expect(uptime[0]).toEqual({ upMs: 29 * 60_250, checks: 29, failed: 10 })
      // Events: a heartbeat per attempt, a status change per failure; each monitor's in order.
      const events = yield* sql<{ type: string; monitorId: string; tx: string }>`
        SELECT type, data->>'monitorId' AS "monitorId", tx::text AS tx FROM domain_events
        WHERE data->>'monitorId' IN ${sql.in(ids)} ORDER BY id`
      expect(events.filter((event) => event.type === "heartbeat").length).toBe(29)
      expect(events.filter((event) => event.type === "monitor.status").map((event) => event.monitorId).sort())
        .toEqual(ids.filter((_, i) => i % 3 === 0 && i < 29).sort())
      const down = ids[3]
      expect(events.filter((event) => event.monitorId === down).map((event) => event.type))
        .toEqual(["heartbeat", "monitor.status"])
      // Written together: far fewer transactions than attempts (one each before group commit).
      expect(new Set(events.map((event) => event.tx)).size).toBeLessThan(10)

      // A replay of the same attempts writes nothing and says so.
      const replays = yield* Effect.forEach(ids.slice(0, 5), (monitorId) =>
        recorder.record({
          monitorId,
          slotAt: SLOT,
          attempt: 0,
          checkedAt,
          result: { status: "up", responseTimeMs: 5, statusCode: 200 }
        }), { concurrency: "unbounded" })
      expect(replays.every((outcome) => outcome._tag === "Skipped" && outcome.reason === "duplicate")).toBe(true)
      const [{ n }] = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM heartbeats WHERE monitor_id IN ${sql.in(ids)}`
      expect(n).toBe(29)
    }))

  it.effect("claims due together share a statement and take each slot exactly once", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const recorder = yield* CheckRecorder
      const ids = yield* setupMonitors(20)
      // Each slot claimed three times at once (two runners and a stale alarm, say).
      const claims = yield* Effect.forEach(
        [...ids, ...ids, ...ids],
        (monitorId) => recorder.claim({ monitorId, expected: SLOT, slotAt: SLOT, frequency: 60 }),
        { concurrency: "unbounded" }
      )
      const won = claims.filter(Option.isSome).map((claim) => claim.value)
      expect(won.map((claim) => claim.monitorId).sort()).toEqual([...ids].sort())
      expect(won.every((claim) => claim.nextCheckAt === SLOT + 60_000 && claim.slotAt === SLOT)).toBe(true)
      const rows = yield* sql<{ next: Date }>`SELECT next_check_at AS next FROM monitors WHERE id IN ${sql.in(ids)}`
      expect(rows.every((row) => row.next.getTime() === SLOT + 60_000)).toBe(true)
    }))
})
