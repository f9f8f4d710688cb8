import { describe, expect, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { appendStatement, type DomainEvent, Events, EVENTS_CHANNEL } from "../../services/platform/Events.ts"
import { createTestDatabase } from "../support/database.ts"
import { startRunner, waitUntil } from "../support/eventsRunner.ts"
import { realSleep } from "../support/wait.ts"

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
      yield* runner.run(Effect.flatMap(Events, (events) =>
        events.consumeBatch(
          "paced",
          (batch) => Effect.sync(() => batches.push(batch.map((event) => (event.data as { n: number }).n))),
          { from: "now" }
        )))

      const count = 30
      const started = Date.now()
      // One commit (and one notification) per event, 15 ms apart.
      for (let n = 0; n < count; n++) {
        yield* runner.run(Effect.flatMap(Events, (events) => events.publish({ type: "burst", data: { n } })))
        yield* realSleep(15)
      }
      const elapsed = Date.now() - started
      yield* waitUntil("every event consumed", () => batches.flat().length >= count)

      expect(batches.flat()).toEqual(Array.from({ length: count }, (_, n) => n))
      // One pass per notification would be ~30 calls; paced passes are at least `paceMs` apart.
      expect(batches.length).toBeLessThanOrEqual(Math.ceil(elapsed / paceMs) + 2)
    }))
})
