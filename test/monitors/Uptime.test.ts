import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import {
  accountInterval,
  type AccountIntervalInput,
  intervalBuckets,
  Uptime,
  uptimePercent
} from "../../services/monitors/Uptime.ts"
import { makeId } from "../../services/platform/Ids.ts"
import { TestDatabase } from "../support/database.ts"

const HOUR = 3_600_000
const at = (iso: string) => new Date(iso)
const plus = (date: Date, ms: number) => new Date(date.getTime() + ms)

/** An organization and a monitor row in `status` since `statusSince` (the open uptime interval). */
const makeMonitor = (status: string, statusSince: Date) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const orgId = makeId("org")
    const monitorId = makeId("mon")
    yield* sql`INSERT INTO organizations (id, slug, name, plan) VALUES (${orgId}, ${orgId.toLowerCase()}, 'Uptime', 'free')`
    yield* sql`
      INSERT INTO monitors (id, org_id, name, url, status, status_since, active)
      VALUES (${monitorId}, ${orgId}, 'm', 'https://example.com', ${status}, ${statusSince.toISOString()}::timestamptz,
              ${status !== "paused"})`
    return monitorId
  })

const account = (input: AccountIntervalInput) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* accountInterval(sql, input)
  })

const figures = (monitorId: string, now: Date) =>
  Effect.gen(function*() {
    const uptime = yield* Uptime
    const result = yield* uptime.uptime([monitorId], ["24h", "7d", "30d"], { now })
    return result.get(monitorId)!
  })

// Real clock: `uptime` gets explicit `now`s, and `pruneHeartbeats` reads the Clock.
layer(Uptime.layer.pipe(Layer.provideMerge(TestDatabase)), { excludeTestServices: true })("Uptime", (it) => {
  it("splits intervals at hour boundaries and puts check counters in the check's hour", () => {
    const buckets = intervalBuckets({
      monitorId: "mon_x",
      from: at("2026-03-10T10:30:00.000Z"),
      to: at("2026-03-10T12:15:00.000Z"),
      status: "up",
      checks: 1,
      failed: 0,
      responseTimeMs: 120
    })
    expect(buckets.map((b) => [new Date(b.hour).toISOString(), b.up_ms, b.down_ms, b.checks])).toEqual([
      ["2026-03-10T10:00:00.000Z", 30 * 60_000, 0, 0],
      ["2026-03-10T11:00:00.000Z", 60 * 60_000, 0, 0],
      ["2026-03-10T12:00:00.000Z", 15 * 60_000, 0, 1]
    ])
    expect(
      intervalBuckets({
        monitorId: "m",
        from: at("2026-03-10T10:00:00Z"),
        to: at("2026-03-10T12:00:00Z"),
        status: "paused"
      })
    )
      .toEqual([])
    expect(uptimePercent({ upMs: 0, downMs: 0 })).toBe(100)
  })

  it.effect("23 hours up and 1 hour down over 24 hours is 95.83 %", () =>
    Effect.gen(function*() {
      const now = at("2026-03-10T00:00:00.000Z")
      const id = yield* makeMonitor("down", now)
      yield* account({ monitorId: id, from: plus(now, -24 * HOUR), to: plus(now, -HOUR), status: "up" })
      yield* account({ monitorId: id, from: plus(now, -HOUR), to: now, status: "down" })
      const result = yield* figures(id, now)
      expect(result["24h"]).toBeCloseTo((23 / 24) * 100, 9)
      expect(result["24h"]).toBeCloseTo(95.8333, 4)
      // Nothing older: the longer windows see the same 24 hours.
      expect(result["7d"]).toBeCloseTo((23 / 24) * 100, 9)
      expect(result["30d"]).toBeCloseTo((23 / 24) * 100, 9)
    }))

  it.effect("paused and pending time counts in neither up nor down", () =>
    Effect.gen(function*() {
      const now = at("2026-03-10T00:00:00.000Z")
      const id = yield* makeMonitor("paused", plus(now, -2 * HOUR))
      const t0 = plus(now, -20 * HOUR)
      yield* account({ monitorId: id, from: t0, to: plus(t0, 3 * HOUR), status: "pending" })
      yield* account({ monitorId: id, from: plus(t0, 3 * HOUR), to: plus(t0, 13 * HOUR), status: "up" })
      yield* account({ monitorId: id, from: plus(t0, 13 * HOUR), to: plus(t0, 16 * HOUR), status: "paused" })
      yield* account({ monitorId: id, from: plus(t0, 16 * HOUR), to: plus(t0, 18 * HOUR), status: "down" })
      // [now-2h, now) is the open interval in `paused`: also ignored.
      const result = yield* figures(id, now)
      expect(result["24h"]).toBeCloseTo((10 / 12) * 100, 9)
      expect(result["30d"]).toBeCloseTo((10 / 12) * 100, 9)
    }))

  it.effect("degraded time counts as not down; intervals crossing hours add up", () =>
    Effect.gen(function*() {
      const now = at("2026-03-10T12:00:00.000Z")
      const id = yield* makeMonitor("up", now)
      // 08:20–09:50 degraded, 09:50–10:05 down, 10:05–12:00 up: 3h25m not down, 15 min down.
      yield* account({
        monitorId: id,
        from: at("2026-03-10T08:20:00Z"),
        to: at("2026-03-10T09:50:00Z"),
        status: "degraded"
      })
      yield* account({
        monitorId: id,
        from: at("2026-03-10T09:50:00Z"),
        to: at("2026-03-10T10:05:00Z"),
        status: "down"
      })
      yield* account({ monitorId: id, from: at("2026-03-10T10:05:00Z"), to: now, status: "up" })
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ hour: Date; up_ms: string; down_ms: string }>`
        SELECT hour, up_ms, down_ms FROM monitor_uptime_hourly WHERE monitor_id = ${id} ORDER BY hour`
      expect(rows.map((row) => [row.hour.toISOString(), Number(row.up_ms), Number(row.down_ms)])).toEqual([
        ["2026-03-10T08:00:00.000Z", 40 * 60_000, 0],
        ["2026-03-10T09:00:00.000Z", 50 * 60_000, 10 * 60_000],
        ["2026-03-10T10:00:00.000Z", 55 * 60_000, 5 * 60_000],
        ["2026-03-10T11:00:00.000Z", 60 * 60_000, 0]
      ])
      const result = yield* figures(id, now)
      expect(result["24h"]).toBeCloseTo((205 / 220) * 100, 9)
    }))

  it.effect("the hour the window starts in counts pro rata", () =>
    Effect.gen(function*() {
      const now = at("2026-03-10T10:30:00.000Z")
      const id = yield* makeMonitor("up", now)
      // Yesterday 10:00–11:00 down (the 24 h window starts at 10:30, half-way through it),
      // then up until now.
      yield* account({
        monitorId: id,
        from: at("2026-03-09T10:00:00Z"),
        to: at("2026-03-09T11:00:00Z"),
        status: "down"
      })
      yield* account({ monitorId: id, from: at("2026-03-09T11:00:00Z"), to: now, status: "up" })
      const result = yield* figures(id, now)
      // 24 h: half of the down hour falls inside → 23.5 h up of 24 h.
      expect(result["24h"]).toBeCloseTo((23.5 / 24) * 100, 9)
      // 7 d: the whole down hour → 23.5 h up of 24.5 h.
      expect(result["7d"]).toBeCloseTo((23.5 / 24.5) * 100, 9)
    }))

  it.effect("the open interval since status_since counts in the current status", () =>
    Effect.gen(function*() {
      const now = at("2026-03-10T06:00:00.000Z")
      const id = yield* makeMonitor("up", plus(now, -2 * HOUR))
      yield* account({ monitorId: id, from: plus(now, -3 * HOUR), to: plus(now, -2 * HOUR), status: "down" })
      const result = yield* figures(id, now)
      expect(result["24h"]).toBeCloseTo((2 / 3) * 100, 9)

      // Down for 30 days and still down: the open interval is clipped to each window.
      const down = yield* makeMonitor("down", plus(now, -40 * 24 * HOUR))
      const downFigures = yield* figures(down, now)
      expect(downFigures).toEqual({ "24h": 0, "7d": 0, "30d": 0 })
    }))

  it.effect("no data is 100 %, and one query serves many monitors", () =>
    Effect.gen(function*() {
      const now = at("2026-03-10T00:00:00.000Z")
      const fresh = yield* makeMonitor("pending", plus(now, -HOUR))
      const half = yield* makeMonitor("up", now)
      yield* account({ monitorId: half, from: plus(now, -2 * HOUR), to: plus(now, -HOUR), status: "up" })
      yield* account({ monitorId: half, from: plus(now, -HOUR), to: now, status: "down" })
      // Data after `now` is not counted.
      yield* account({ monitorId: half, from: plus(now, HOUR), to: plus(now, 2 * HOUR), status: "down" })
      const uptime = yield* Uptime
      const result = yield* uptime.uptime([fresh, half, "mon_unknown"], ["24h"], { now })
      expect(result.get(fresh)).toEqual({ "24h": 100 })
      expect(result.get(half)!["24h"]).toBeCloseTo(50, 9)
      expect(result.has("mon_unknown")).toBe(false)
      const totals = yield* uptime.totals([fresh], ["30d"], { now })
      expect(totals.get(fresh)).toEqual({ "30d": { upMs: 0, downMs: 0 } })
    }))

  it.effect("pruneHeartbeats deletes raw heartbeats older than the retention and keeps rollups", () =>
    Effect.gen(function*() {
      const now = new Date(Math.floor(Date.now() / HOUR) * HOUR)
      const id = yield* makeMonitor("up", now)
      const sql = yield* SqlClient.SqlClient
      const times = [100, 91, 89, 1].map((days) => plus(now, -days * 24 * HOUR))
      for (const time of times) {
        yield* sql`
          INSERT INTO heartbeats (monitor_id, slot_at, checked_at, status, response_time_ms, region)
          VALUES (${id}, ${time.toISOString()}::timestamptz, ${time.toISOString()}::timestamptz, 'up', 10, 'test')`
        yield* account({ monitorId: id, from: time, to: plus(time, HOUR), status: "up", checks: 1, checkedAt: time })
      }
      const uptime = yield* Uptime
      expect(yield* uptime.pruneHeartbeats()).toBe(2)
      const left = yield* sql<{ checked_at: Date }>`
        SELECT checked_at FROM heartbeats WHERE monitor_id = ${id} ORDER BY checked_at`
      expect(left.map((row) => row.checked_at.toISOString())).toEqual(times.slice(2).map((t) => t.toISOString()))
      const rollups = yield* sql<
        { n: string }
      >`SELECT count(*) AS n FROM monitor_uptime_hourly WHERE monitor_id = ${id}`
      expect(Number(rollups[0].n)).toBe(4)
      expect(yield* uptime.pruneHeartbeats(30)).toBe(1)
    }))
})
