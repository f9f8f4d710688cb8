import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { TestRunner } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { Events } from "../../services/events/Events.ts"
import { CheckRecorder } from "../../services/monitors/CheckRecorder.ts"
import { Checker } from "../../services/monitors/checks/Checker.ts"
import { Monitor } from "../../services/monitors/MonitorProtocol.ts"
import { Monitors } from "../../services/monitors/Monitors.ts"
import { Uptime } from "../../services/monitors/Uptime.ts"
import { OutboundGuard } from "../../services/outbound/OutboundGuard.ts"
import { AppConfig } from "../../services/platform/AppConfig.ts"
import { MonitorSchedulingLive } from "../../src/entities/monitors/MonitorScheduling.ts"
import { testConfig } from "../support/app.ts"
import { createTestDatabase, databaseUnderTestClock } from "../support/database.ts"
import { tempDir } from "../support/tempDir.ts"
import { eventuallySettled as eventually, stays } from "../support/wait.ts"

/**
 * The monitor entity's schedule under TestClock: the real entity (effect/cluster
 * `TestRunner`), the real services on a fresh Postgres database, real HTTP checks
 * against a local server. Time only moves when the test adjusts the clock; database
 * and network work happens in real time, so after each step the test waits (in real
 * time) for its effects.
 */

// --- a local HTTP target whose answer the test controls ----------------------------------

interface Target {
  readonly url: (path: string) => string
  readonly hits: (path: string) => number
  readonly setStatus: (path: string, status: number) => void
}

const startTarget = Effect.acquireRelease(
  Effect.callback<{ readonly server: Http.Server; readonly target: Target }>((resume) => {
    const hits = new Map<string, number>()
    const statuses = new Map<string, number>()
    const server = Http.createServer((req, res) => {
      const path = req.url ?? "/"
      hits.set(path, (hits.get(path) ?? 0) + 1)
      res.statusCode = statuses.get(path) ?? 200
      res.end("ok")
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resume(Effect.succeed({
        server,
        target: {
          url: (path) => `http://127.0.0.1:${port}${path}`,
          hits: (path) => hits.get(path) ?? 0,
          setStatus: (path, status) => statuses.set(path, status)
        }
      }))
    })
  }),
  ({ server }) =>
    Effect.callback<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
).pipe(Effect.map(({ target }) => target))

// --- the system under test --------------------------------------------------------------

const build = Effect.gen(function*() {
  // Start the clock at the real time: rows written by Postgres defaults must not be in its future.
  yield* TestClock.setTime(Date.now())
  const url = yield* createTestDatabase
  const config = testConfig(url, { dataDir: yield* tempDir("canopy-schedule-") })
  const layer = MonitorSchedulingLive({ sweepInterval: "10 seconds" }).pipe(
    Layer.provideMerge(Layer.mergeAll(Monitors.layer, CheckRecorder.layer, Checker.layer)),
    Layer.provideMerge(Layer.mergeAll(Uptime.layer, OutboundGuard.layerFromConfig, Events.layer)),
    Layer.provideMerge(TestRunner.layer),
    Layer.provideMerge(databaseUnderTestClock(url, 8)),
    Layer.provideMerge(AppConfig.layerWith(config))
  )
  const context = yield* Layer.build(layer)
  const sql = Context.get(context, SqlClient.SqlClient)
  const monitors = Context.get(context, Monitors)
  const orgId = "org_schedule_test"
  yield* sql`INSERT INTO organizations (id, slug, name, plan) VALUES (${orgId}, 'schedule', 'Schedule', 'free')`

  interface Beat {
    readonly slotAt: number
    readonly attempt: number
    readonly checkedAt: number
    readonly status: string
    readonly statusCode: number | null
  }
  const beats = (monitorId: string) =>
    sql<Beat>`
      SELECT extract(epoch FROM slot_at) * 1000 AS "slotAt", attempt,
        extract(epoch FROM checked_at) * 1000 AS "checkedAt", status, status_code AS "statusCode"
      FROM heartbeats WHERE monitor_id = ${monitorId} ORDER BY checked_at, attempt`.pipe(
      Effect.map((rows) =>
        rows.map((row) => ({ ...row, slotAt: Number(row.slotAt), checkedAt: Number(row.checkedAt) }))
      ),
      Effect.orDie
    )
  const monitorRow = (monitorId: string) =>
    sql<{ status: string; consecutiveFailures: number; nextCheckAt: number; active: boolean }>`
      SELECT status, consecutive_failures AS "consecutiveFailures", active,
        extract(epoch FROM next_check_at) * 1000 AS "nextCheckAt"
      FROM monitors WHERE id = ${monitorId}`.pipe(
      Effect.map((rows) => ({ ...rows[0], nextCheckAt: Number(rows[0].nextCheckAt) })),
      Effect.orDie
    )
  const statusEvents = (monitorId: string) =>
    sql<{ data: { status: string; previousStatus: string } }>`
      SELECT data FROM domain_events WHERE type = 'monitor.status' AND data->>'monitorId' = ${monitorId}
      ORDER BY id`.pipe(Effect.map((rows) => rows.map((row) => row.data)), Effect.orDie)
  const heartbeatEvents = (monitorId: string) =>
    sql<{ n: number }>`
      SELECT count(*)::int AS n FROM domain_events WHERE type = 'heartbeat' AND data->>'monitorId' = ${monitorId}`
      .pipe(Effect.map((rows) => rows[0].n), Effect.orDie)
  const inspect = (monitorId: string) =>
    Effect.flatMap(Monitor.client, (client) => client(monitorId).Inspect()).pipe(
      Effect.provideContext(context),
      Effect.orDie
    )
  const target = yield* startTarget
  const create = (path: string, settings?: { retries?: number; retryInterval?: number; frequency?: number }) =>
    monitors.create(orgId, {
      name: path,
      url: target.url(path),
      frequency: settings?.frequency ?? 60,
      timeout: 10,
      retries: settings?.retries ?? 1,
      retryInterval: settings?.retryInterval ?? 20
    }).pipe(Effect.orDie)
  return { sql, monitors, orgId, beats, monitorRow, statusEvents, heartbeatEvents, inspect, target, create }
})

const seconds = (n: number) => n * 1000

describe("Monitor entity schedule (TestClock)", () => {
  it.effect("checks at its frequency, on the slot, once per slot", () =>
    Effect.gen(function*() {
      const t = yield* build
      const monitor = yield* t.create("/freq")
      // Created with next_check_at = now: the first check runs at once (via monitor.changed → Reload).
      const [first] = yield* eventually("first check", t.beats(monitor.id), (b) => b.length === 1)
      const t0 = first.slotAt
      expect(first).toMatchObject({ attempt: 0, status: "up", statusCode: 200 })
      expect(first.checkedAt).toBe(t0)
      expect((yield* t.monitorRow(monitor.id)).status).toBe("up")
      expect((yield* t.monitorRow(monitor.id)).nextCheckAt).toBe(t0 + seconds(60))

      yield* TestClock.adjust("59 seconds")
      yield* stays(t.beats(monitor.id), (b) => b.length === 1)
      yield* TestClock.adjust("1 second")
      yield* eventually("second check", t.beats(monitor.id), (b) => b.length === 2)
      for (let i = 3; i <= 5; i++) {
        yield* TestClock.adjust("60 seconds")
        yield* eventually(`check ${i}`, t.beats(monitor.id), (b) => b.length === i)
      }
      const all = yield* t.beats(monitor.id)
      expect(all.map((b) => b.slotAt - t0)).toEqual([0, 60, 120, 180, 240].map(seconds))
      // Each check starts exactly at its slot (no lateness under the TestClock).
      expect(all.every((b) => b.checkedAt === b.slotAt && b.attempt === 0)).toBe(true)
      expect(t.target.hits("/freq")).toBe(5)
      expect(yield* t.heartbeatEvents(monitor.id)).toBe(5)
      expect(yield* t.statusEvents(monitor.id)).toEqual([
        expect.objectContaining({ previousStatus: "pending", status: "up" })
      ])
      expect(yield* t.inspect(monitor.id)).toMatchObject({ running: true })
    }))

  it.effect("retries before down (retries 1: down after 2 failures, the second after retryInterval) and recovers after one success", () =>
    Effect.gen(function*() {
      const t = yield* build
      t.target.setStatus("/flaky", 200)
      const monitor = yield* t.create("/flaky", { retries: 1, retryInterval: 20 })
      const [first] = yield* eventually("first check", t.beats(monitor.id), (b) => b.length === 1)
      const t0 = first.slotAt
      expect((yield* t.monitorRow(monitor.id)).status).toBe("up")

      // The target starts failing: slot 1's check fails, but one failure is not enough.
      t.target.setStatus("/flaky", 503)
      yield* TestClock.adjust("60 seconds")
      yield* eventually("failed check", t.beats(monitor.id), (b) => b.length === 2)
      expect((yield* t.beats(monitor.id))[1]).toMatchObject({ status: "down", statusCode: 503, attempt: 0 })
      expect(yield* t.monitorRow(monitor.id)).toMatchObject({ status: "up", consecutiveFailures: 1 })

      // The retry comes retryInterval (20 s) later, not before.
      yield* TestClock.adjust("19 seconds")
      yield* stays(t.beats(monitor.id), (b) => b.length === 2)
      yield* TestClock.adjust("1 second")
      const afterRetry = yield* eventually("retry", t.beats(monitor.id), (b) => b.length === 3)
      expect(afterRetry[2]).toMatchObject({ slotAt: t0 + seconds(60), attempt: 1, status: "down" })
      expect(afterRetry[2].checkedAt).toBe(t0 + seconds(80))
      expect(yield* t.monitorRow(monitor.id)).toMatchObject({ status: "down", consecutiveFailures: 2 })

      // Already down: the next slot is checked once, without retries.
      yield* TestClock.adjust("40 seconds")
      yield* eventually("next slot while down", t.beats(monitor.id), (b) => b.length === 4)
      yield* TestClock.adjust("20 seconds")
      yield* stays(t.beats(monitor.id), (b) => b.length === 4)

      // One success brings it back up.
      t.target.setStatus("/flaky", 200)
      yield* TestClock.adjust("40 seconds")
      const recovered = yield* eventually("recovery", t.beats(monitor.id), (b) => b.length === 5)
      expect(recovered[4]).toMatchObject({ slotAt: t0 + seconds(180), attempt: 0, status: "up" })
      expect(yield* t.monitorRow(monitor.id)).toMatchObject({ status: "up", consecutiveFailures: 0 })
      expect((yield* t.statusEvents(monitor.id)).map((e) => `${e.previousStatus}->${e.status}`)).toEqual([
        "pending->up",
        "up->down",
        "down->up"
      ])
    }))

  it.effect("a failure that recovers on the retry never turns the monitor down", () =>
    Effect.gen(function*() {
      const t = yield* build
      t.target.setStatus("/blip", 500)
      const monitor = yield* t.create("/blip", { retries: 2, retryInterval: 15 })
      yield* eventually("first attempt", t.beats(monitor.id), (b) => b.length === 1)
      expect(yield* t.monitorRow(monitor.id)).toMatchObject({ status: "pending", consecutiveFailures: 1 })
      yield* TestClock.adjust("15 seconds")
      yield* eventually("second attempt", t.beats(monitor.id), (b) => b.length === 2)
      expect(yield* t.monitorRow(monitor.id)).toMatchObject({ status: "pending", consecutiveFailures: 2 })
      t.target.setStatus("/blip", 200)
      yield* TestClock.adjust("15 seconds")
      const all = yield* eventually("third attempt", t.beats(monitor.id), (b) => b.length === 3)
      expect(all.map((b) => [b.attempt, b.status])).toEqual([[0, "down"], [1, "down"], [2, "up"]])
      expect(yield* t.monitorRow(monitor.id)).toMatchObject({ status: "up", consecutiveFailures: 0 })
      expect((yield* t.statusEvents(monitor.id)).map((e) => e.status)).toEqual(["up"])
    }))

  it.effect("DELETE (soft) stops the checks; PATCH active:false pauses and active:true resumes", () =>
    Effect.gen(function*() {
      const t = yield* build
      const deleted = yield* t.create("/deleted")
      const paused = yield* t.create("/paused")
      yield* eventually(
        "first checks",
        Effect.all([t.beats(deleted.id), t.beats(paused.id)]),
        ([a, b]) => a.length === 1 && b.length === 1
      )

      yield* t.monitors.remove(t.orgId, deleted.id).pipe(Effect.orDie)
      yield* t.monitors.update(t.orgId, paused.id, { active: false }).pipe(Effect.orDie)
      yield* eventually(
        "schedules stopped",
        Effect.all([t.inspect(deleted.id), t.inspect(paused.id)]),
        ([a, b]) => !a.running && !b.running
      )
      for (let i = 0; i < 3; i++) {
        yield* TestClock.adjust("60 seconds")
        yield* stays(
          Effect.all([t.beats(deleted.id), t.beats(paused.id)]),
          ([a, b]) => a.length === 1 && b.length === 1
        )
      }
      // The sweep does not revive inactive monitors either.
      expect(t.target.hits("/deleted")).toBe(1)
      expect(t.target.hits("/paused")).toBe(1)
      expect(yield* t.monitorRow(deleted.id)).toMatchObject({ active: false, status: "paused" })
      expect(yield* t.monitorRow(paused.id)).toMatchObject({ active: false, status: "paused" })

      // Re-activated: checked at once, then every interval again.
      yield* t.monitors.update(t.orgId, paused.id, { active: true }).pipe(Effect.orDie)
      const resumed = yield* eventually("resumed check", t.beats(paused.id), (b) => b.length === 2)
      yield* TestClock.adjust("60 seconds")
      const next = yield* eventually("next check after resume", t.beats(paused.id), (b) => b.length === 3)
      expect(next[2].slotAt - resumed[1].slotAt).toBe(seconds(60))
      expect(yield* t.monitorRow(paused.id)).toMatchObject({ active: true, status: "up" })
      expect(t.target.hits("/deleted")).toBe(1)
    }))

  it.effect("a frequency change takes effect at the next check", () =>
    Effect.gen(function*() {
      const t = yield* build
      const slower = yield* t.create("/slower", { frequency: 60 })
      const faster = yield* t.create("/faster", { frequency: 300 })
      const [[a0], [b0]] = yield* eventually(
        "first checks",
        Effect.all([t.beats(slower.id), t.beats(faster.id)]),
        ([a, b]) => a.length === 1 && b.length === 1
      )

      yield* TestClock.adjust("10 seconds")
      yield* t.monitors.update(t.orgId, slower.id, { frequency: 180 }).pipe(Effect.orDie)
      yield* t.monitors.update(t.orgId, faster.id, { frequency: 60 }).pipe(Effect.orDie)
      yield* eventually(
        "rescheduled",
        Effect.all([t.monitorRow(slower.id), t.monitorRow(faster.id)]),
        ([a, b]) => a.nextCheckAt === a0.slotAt + seconds(180) && b.nextCheckAt === b0.slotAt + seconds(60)
      )

      // 60 s after the first checks: only the monitor now at 60 s is checked.
      yield* TestClock.adjust("50 seconds")
      yield* eventually("faster checked", t.beats(faster.id), (b) => b.length === 2)
      yield* stays(t.beats(slower.id), (b) => b.length === 1)
      // 180 s: the slowed-down monitor's next check.
      yield* TestClock.adjust("60 seconds")
      yield* eventually("faster again", t.beats(faster.id), (b) => b.length === 3)
      yield* TestClock.adjust("60 seconds")
      const slowBeats = yield* eventually("slower checked", t.beats(slower.id), (b) => b.length === 2)
      expect(slowBeats[1].slotAt - a0.slotAt).toBe(seconds(180))
      const fastBeats = yield* eventually("faster 4th", t.beats(faster.id), (b) => b.length === 4)
      expect(fastBeats.map((b) => (b.slotAt - b0.slotAt) / 1000)).toEqual([0, 60, 120, 180])
    }))
})
