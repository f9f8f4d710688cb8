import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { MessageStorage, TestRunner } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { readAfter, START } from "../../services/events/EventLog.ts"
import { pruneEvents } from "../../services/events/EventRetention.ts"
import { EventRetentionCron } from "../../src/entities/events/EventRetentionCron.ts"
import { createTestDatabase, databaseUnderTestClock, TestDatabase } from "../support/database.ts"
import { eventually } from "../support/wait.ts"

const DAY_MS = 24 * 60 * 60 * 1000

/**
 * Outbox events numbered `n` in `(tx, id)` order, `ageDays` old. Explicit `tx`s: each event
 * as if its own transaction, far below any real one, so every event is below the horizon.
 */
const insertEvents = (sql: SqlClient.SqlClient, events: ReadonlyArray<{ n: number; ageDays: number }>, now: number) =>
  Effect.forEach(events, ({ ageDays, n }) =>
    sql`
      INSERT INTO domain_events (type, data, tx, created_at)
      VALUES ('monitor.heartbeat', ${JSON.stringify({ n })}::jsonb, ${n}, ${new Date(now - ageDays * DAY_MS)})`, {
    discard: true
  })

const remaining = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ n: number }>`SELECT (data->>'n')::int AS n FROM domain_events ORDER BY tx, id`,
    (rows) => rows.map((row) => row.n)
  )

/** A durable consumer whose cursor is on event `n` (0: the start), last moved `idleDays` ago. */
const consumerAt = (sql: SqlClient.SqlClient, name: string, n: number, idleDays: number, now: number) =>
  sql`
    INSERT INTO event_consumers (name, last_tx, last_event_id, updated_at)
    SELECT ${name}, coalesce(max(tx), 0), coalesce(max(id), 0), ${new Date(now - idleDays * DAY_MS)}
    FROM domain_events WHERE tx = ${n}
    ON CONFLICT (name) DO UPDATE SET last_tx = excluded.last_tx, last_event_id = excluded.last_event_id,
      updated_at = excluded.updated_at`

describe("outbox retention", () => {
  it.live("deletes events past the retention once every live consumer has passed them", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const now = Date.now()
      yield* insertEvents(sql, [
        ...[1, 2, 3, 4, 5].map((n) => ({ n, ageDays: 10 })),
        ...[6, 7, 8].map((n) => ({ n, ageDays: 1 }))
      ], now)
      yield* consumerAt(sql, "alerts", 3, 0, now)
      yield* consumerAt(sql, "webhooks", 8, 0, now)
      // Gone from the code 40 days ago, still at the start: it holds nothing back.
      yield* consumerAt(sql, "renamed-long-ago", 0, 40, now)

      // `alerts` has handled events 1–3 only (batches of two: the loop goes on until a short one).
      expect(yield* pruneEvents(sql, { now, batchSize: 2 })).toBe(3)
      expect(yield* remaining(sql)).toEqual([4, 5, 6, 7, 8])

      // Once it has handled all of them, the rest past the retention go; the last 7 days stay.
      yield* consumerAt(sql, "alerts", 8, 0, now)
      expect(yield* pruneEvents(sql, { now, batchSize: 2 })).toBe(2)
      expect(yield* remaining(sql)).toEqual([6, 7, 8])
      expect(yield* pruneEvents(sql, { now })).toBe(0)
    }).pipe(Effect.provide(TestDatabase)))

  it.live("keeps the newest event, where readers find their place, even past the retention", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const now = Date.now()
      yield* insertEvents(sql, [1, 2, 3].map((n) => ({ n, ageDays: 30 })), now)

      expect(yield* pruneEvents(sql, { now })).toBe(2)
      expect(yield* remaining(sql)).toEqual([3])
      const read = yield* readAfter(sql, { after: START, limit: 10 })
      expect(read.events.map((positioned) => positioned.event.data)).toEqual([{ n: 3 }])
      expect(read.head).toEqual(read.events[0].position)
    }).pipe(Effect.provide(TestDatabase)))

  it.effect("runs hourly on the cluster", () =>
    Effect.gen(function*() {
      // Start at the real time: Postgres' defaults write real times.
      yield* TestClock.setTime(Date.now())
      const url = yield* createTestDatabase
      const context = yield* Layer.build(
        EventRetentionCron.pipe(
          Layer.provideMerge(TestRunner.layer),
          Layer.provideMerge(databaseUnderTestClock(url, 4))
        )
      )
      const sql = Context.get(context, SqlClient.SqlClient)
      yield* insertEvents(sql, [{ n: 1, ageDays: 8 }, { n: 2, ageDays: 8 }, { n: 3, ageDays: 0 }], Date.now())
      // The first run is scheduled from the clock's time when the cron starts: not before moving it.
      const driver = Context.get(context, MessageStorage.MemoryDriver)
      yield* eventually(
        "the first run scheduled",
        Effect.sync(() => driver.journal.some((envelope) => envelope.address.entityType.endsWith("/PruneEvents"))),
        (scheduled) => scheduled
      )

      yield* TestClock.adjust("61 minutes")
      yield* eventually("the hourly prune", remaining(sql), (left) => left.length === 1)
      expect(yield* remaining(sql)).toEqual([3])
    }).pipe(Effect.scoped))
})
