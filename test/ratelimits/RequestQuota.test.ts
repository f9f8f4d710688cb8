import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { TestRunner } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { RequestQuota } from "../../services/ratelimits/RequestQuota.ts"
import { OrganizationEntityLayer } from "../../src/entities/ratelimits/OrganizationEntity.ts"
import { createTestDatabase, databaseUnderTestClock } from "../support/database.ts"
import { eventually } from "../support/wait.ts"

/**
 * The organization's request quota across minute windows, under the TestClock: the real
 * entity and the runner's leases, with the window boundary reached by moving the clock
 * rather than by waiting for the next real minute.
 */
const build = Effect.gen(function*() {
  // 10:00:30 UTC, half way through a window.
  yield* TestClock.setTime(Date.UTC(2026, 10, 23, 10, 0, 30))
  const url = yield* createTestDatabase
  const layer = RequestQuota.layer.pipe(
    Layer.provideMerge(OrganizationEntityLayer),
    Layer.provideMerge(TestRunner.layer),
    Layer.provideMerge(databaseUnderTestClock(url, 4))
  )
  const context = yield* Layer.build(layer)
  const quota = Context.get(context, RequestQuota)
  // The in-memory runner assigns its shards in the background, in real time: wait for a first answer.
  const warmUp = yield* Effect.forkChild(quota.take("org_warm_up", 50))
  yield* eventually("the runner to host entities", Effect.sync(() => warmUp.pollUnsafe()), (exit) => exit !== undefined)
  const sql = Context.get(context, SqlClient.SqlClient)
  const takeMany = (orgId: string, limit: number, n: number) =>
    Effect.forEach(Array.from({ length: n }), () => quota.take(orgId, limit))
  return { quota, sql, takeMany }
})

const windowEnd = Date.UTC(2026, 10, 23, 10, 1, 0) / 1000

describe("request quota windows (TestClock)", () => {
  it.effect("grants the plan's requests, refuses the next until the window ends, then grants again", () =>
    Effect.gen(function*() {
      const t = yield* build
      const granted = yield* t.takeMany("org_a", 50, 50)
      expect(granted.every((decision) => decision.allowed)).toBe(true)
      expect(granted.map((decision) => decision.remaining)).toEqual(Array.from({ length: 50 }, (_, i) => 49 - i))
      expect(granted.every((decision) => decision.reset === windowEnd)).toBe(true)

      const refused = yield* t.quota.take("org_a", 50)
      expect(refused).toEqual({ allowed: false, limit: 50, remaining: 0, reset: windowEnd, retryAfter: 30 })
      // Another organization has a quota of its own.
      expect((yield* t.quota.take("org_b", 50)).allowed).toBe(true)

      yield* TestClock.adjust("29 seconds")
      expect(yield* t.quota.take("org_a", 50)).toMatchObject({ allowed: false, retryAfter: 1 })

      yield* TestClock.adjust("1 second")
      const next = yield* t.quota.take("org_a", 50)
      expect(next).toEqual({ allowed: true, limit: 50, remaining: 49, reset: windowEnd + 60, retryAfter: 60 })
    }))

  it.effect("a larger plan takes effect at once, within the same window", () =>
    Effect.gen(function*() {
      const t = yield* build
      yield* t.takeMany("org_up", 50, 50)
      expect((yield* t.quota.take("org_up", 50)).allowed).toBe(false)
      // Upgraded to 100 requests per minute: the 50 used still count, 50 more are granted.
      const upgraded = yield* t.takeMany("org_up", 100, 51)
      expect(upgraded.slice(0, 50).every((decision) => decision.allowed)).toBe(true)
      expect(upgraded[50]).toMatchObject({ allowed: false, limit: 100, remaining: 0 })
    }))

  it.effect("the entity writes its window back, so a new host resumes the count", () =>
    Effect.gen(function*() {
      const t = yield* build
      yield* t.sql`INSERT INTO organizations (id, slug, name, plan) VALUES ('org_kept', 'kept', 'Kept', 'free')`
      yield* t.takeMany("org_kept", 50, 20)
      // The entity flushes every 200 ms of (test) time: move the clock on until it has.
      const stored = t.sql<{ used: number; windowStart: number }>`
        SELECT used, window_start AS "windowStart" FROM org_rate_windows WHERE org_id = 'org_kept'`.pipe(
        Effect.map((rows) => rows.map((row) => ({ used: Number(row.used), windowStart: Number(row.windowStart) })))
      )
      const rows = yield* eventually(
        "the window written back",
        Effect.andThen(TestClock.adjust("200 millis"), stored),
        (rows) => rows[0]?.used === 20
      )
      expect(rows).toEqual([{ used: 20, windowStart: windowEnd - 60 }])
    }))
})
