import { describe, expect, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { appendStatement, type DomainEvent, Events } from "../../services/platform/Events.ts"
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

      yield* a.sql.withTransaction(
        a.sql`WITH appended AS (${appendStatement(a.sql, [{ type: "quiet", data: { n: 1 } }])})
          SELECT count(*) FROM appended`
      )
      // Committed, but nobody was told: B's readers stay asleep.
      yield* realSleep(1_500)
      expect(consumed).toEqual([])
      expect(yield* Queue.size(live)).toBe(0)

      yield* a.events.notifyCommitted
      yield* waitUntil("B's consumer to get the event", () => consumed.length === 1)
      const event = yield* Queue.take(live).pipe(Effect.timeout("10 seconds"))
      expect(event.type).toBe("quiet")
      expect(consumed.map((e) => e.data)).toEqual([{ n: 1 }])
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
