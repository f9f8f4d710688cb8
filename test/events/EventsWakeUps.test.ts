import { describe, expect, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { appendStatement, type DomainEvent, Events, EVENTS_CHANNEL } from "../../services/events/Events.ts"
import { createTestDatabase } from "../support/database.ts"
import { startRunner, waitUntil } from "../support/eventsRunner.ts"
import { eventually, realSleep } from "../support/wait.ts"

/**
 * How readers are woken under load: publishers that commit without NOTIFY (monitor checks)
 * wake every runner through `notifyCommitted`, and a loop woken by a burst of notifications
 * reads it in a few paced passes, not one pass per commit.
 */
describe("Events wake-ups", () => {
  it.live("events appended without NOTIFY reach another runner's readers once notifyCommitted is called", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      // Polls a minute apart: only a notification can wake these readers within the test.
      const a = yield* startRunner(url, { pollInterval: "1 minute" })
      const b = yield* startRunner(url, { pollInterval: "1 minute" })
      const live = yield* b.run(Effect.flatMap(Events, (events) => events.subscribe))
      const consumed: Array<DomainEvent> = []
      yield* b.run(
        Effect.flatMap(
          Events,
          (events) => events.consume("wake-up", (event) => Effect.sync(() => consumed.push(event)), { from: "now" })
        )
      )
      // The test's own listener sees every notification on the channel, in commit order.
      const notifications = yield* a.run(a.pg.listen(EVENTS_CHANNEL))
      const payloads: Array<string> = []
      const nextPayload = Queue.take(notifications).pipe(
        Effect.map((notification) => payloads.push(notification.payload)),
        Effect.timeoutOrElse({ duration: "30 seconds", orElse: () => Effect.die(new Error("no notification")) })
      )

      yield* a.sql.withTransaction(
        a.sql`WITH appended AS (${appendStatement(a.sql, [{ type: "quiet", data: { n: 1 } }])})
          SELECT count(*) FROM appended`
      )
      yield* a.events.notifyCommitted
      yield* waitUntil("B's consumer to get the event", () => consumed.length === 1, "30 seconds")
      const event = yield* Queue.take(live).pipe(Effect.timeout("30 seconds"))
      expect(event.type).toBe("quiet")
      expect(consumed.map((e) => e.data)).toEqual([{ n: 1 }])

      // A marker sent last arrives after anything sent before it: exactly one wake-up came
      // first (notifyCommitted's), so the append's commit itself notified no one.
      yield* a.pg.notify(EVENTS_CHANNEL, "marker")
      while (payloads.at(-1) !== "marker") yield* nextPayload
      expect(payloads).toEqual(["", "marker"])
    }))

  it.live("a consumer woken by a burst of commits reads it in a few paced passes, in order, once each", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const paceMs = 400
      const runner = yield* startRunner(url, { minConsumerPassMs: paceMs })
      const batches: Array<ReadonlyArray<number>> = []
      const batchTimes: Array<number> = []
      yield* runner.run(Effect.flatMap(Events, (events) =>
        events.consumeBatch(
          "paced",
          (batch) =>
            Effect.sync(() => {
              batchTimes.push(performance.now())
              batches.push(batch.map((event) => (event.data as { n: number }).n))
            }),
          { from: "now" }
        )))

      const count = 30
      // One commit (and one notification) per event, 15 ms apart.
      for (let n = 0; n < count; n++) {
        yield* runner.run(Effect.flatMap(Events, (events) => events.publish({ type: "burst", data: { n } })))
        yield* realSleep(15)
      }
      yield* waitUntil("every event consumed", () => batches.flat().length >= count)

      expect(batches.flat()).toEqual(Array.from({ length: count }, (_, n) => n))
      // One pass per notification would be ~30 calls in about half a second. Passes start at
      // least `paceMs` apart, so the batches fit that spacing over the span they took (one
      // batch of slack: the handler runs a variable moment into its pass). A busy machine may
      // take more passes (a held horizon hands a burst over in parts), never closer ones.
      const span = batchTimes[batchTimes.length - 1] - batchTimes[0]
      expect(batches.length).toBeLessThanOrEqual(Math.floor(span / paceMs) + 2)
    }))

  /** The stored cursor of consumer `name`, and the outbox's last event id. */
  const cursorAndLast = (runner: Effect.Success<ReturnType<typeof startRunner>>, name: string) =>
    Effect.map(
      runner.sql<{ cursor: string; last: string }>`
        SELECT (SELECT last_event_id FROM event_consumers WHERE name = ${name})::text AS cursor,
          (SELECT max(id) FROM domain_events)::text AS last`,
      ([row]) => row
    )

  it.live("a consumer passes over other types' events without a transaction, and stores its cursor later", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      // Polls every 100 ms: the pause below sees several passes, even with no notification.
      const runner = yield* startRunner(url, { idleConsumerCursorMs: 60_000, pollInterval: "100 millis" })
      const wanted: Array<number> = []
      const everything: Array<DomainEvent> = []
      yield* runner.run(Effect.flatMap(Events, (events) =>
        Effect.all([
          events.consume("wanted-only", (event) => Effect.sync(() => wanted.push((event.data as { n: number }).n)), {
            types: ["wanted"],
            from: "now"
          }),
          events.consume("everything", (event) => Effect.sync(() => everything.push(event)), { from: "now" })
        ])))
      const publish = (type: string, n: number) =>
        runner.run(Effect.flatMap(Events, (events) => events.publish({ type, data: { n } })))

      // A first event of its type: the loop has run its transaction and holds its cursor.
      yield* publish("wanted", 0)
      yield* waitUntil("the first wanted event", () => wanted.length === 1)
      // The handler runs inside the pass's transaction: the cursor is stored when it commits.
      const before = yield* eventually(
        "the cursor on the first event",
        cursorAndLast(runner, "wanted-only"),
        (read) => read.cursor === read.last
      )

      // Heartbeat-like traffic of another type: read (the other consumer gets it all), but the
      // wanted-only consumer's passes find nothing of theirs and write nothing.
      for (let n = 1; n <= 20; n++) yield* publish("other", n)
      yield* waitUntil("the other consumer to read everything", () => everything.length === 21)
      yield* realSleep(1_000)
      const skipped = yield* cursorAndLast(runner, "wanted-only")
      expect(skipped.cursor).toBe(before.cursor)
      expect(BigInt(skipped.last)).toBeGreaterThan(BigInt(skipped.cursor))

      // An event of its type is handled at once, and the cursor moves past everything.
      yield* publish("wanted", 21)
      yield* waitUntil("the second wanted event", () => wanted.length === 2)
      expect(wanted).toEqual([0, 21])
      yield* eventually(
        "the cursor past every event",
        cursorAndLast(runner, "wanted-only"),
        (read) => read.cursor === read.last
      )
    }))

  it.live("a consumer with nothing to handle still stores its cursor once idleConsumerCursorMs has passed", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const runner = yield* startRunner(url, { idleConsumerCursorMs: 300 })
      const wanted: Array<DomainEvent> = []
      yield* runner.run(
        Effect.flatMap(
          Events,
          (events) =>
            events.consume("wanted-only", (event) => Effect.sync(() => wanted.push(event)), {
              types: ["wanted"],
              from: "now"
            })
        )
      )
      yield* runner.run(Effect.flatMap(Events, (events) => events.publish({ type: "wanted", data: {} })))
      yield* waitUntil("the wanted event", () => wanted.length === 1)

      for (let n = 1; n <= 5; n++) {
        yield* runner.run(Effect.flatMap(Events, (events) => events.publish({ type: "other", data: { n } })))
      }
      // Woken by those commits, later passes pass the time limit and commit the cursor
      // past them (a restart would not read them again).
      const caughtUp = yield* eventually(
        "the cursor to move past the other events",
        cursorAndLast(runner, "wanted-only"),
        (row) => row.cursor === row.last
      )
      expect(caughtUp.cursor).toBe(caughtUp.last)
      expect(wanted).toHaveLength(1)
    }))
})
