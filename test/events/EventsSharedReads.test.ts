import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Queue, Scope } from "effect"
import { type Position, type PositionedEvent, START } from "../../services/events/EventLog.ts"
import { type DomainEvent, Events } from "../../services/events/Events.ts"
import { covers, extend, makeSharedReads, type Segment, sliceSegment } from "../../services/events/SharedReads.ts"
import { createTestDatabase } from "../support/database.ts"
import { startRunner, waitUntil } from "../support/eventsRunner.ts"
import { eventually } from "../support/wait.ts"

const at = (tx: number, id: number): Position => ({ tx: BigInt(tx), id: BigInt(id) })
const event = (tx: number, id: number, type: string): PositionedEvent => ({
  position: at(tx, id),
  event: { id, type, orgId: null, data: { id }, createdAt: new Date(0) }
})
const ids = (events: ReadonlyArray<PositionedEvent>) => events.map((positioned) => positioned.event.id)

describe("shared outbox reads", () => {
  // Events 1..6 after (5, 0); transaction 7 wrote 2 and 3 (ids need not follow transactions).
  const segment: Segment = {
    after: at(5, 0),
    events: [event(6, 1, "a"), event(7, 2, "b"), event(7, 3, "a"), event(8, 5, "c"), event(9, 4, "a")],
    head: at(11, 9),
    full: false,
    held: true
  }

  it("slices like a read: from the cursor, its types, its limit, and where it may move to", () => {
    const all = sliceSegment(segment, at(6, 1), 10)!
    expect(ids(all.events)).toEqual([2, 3, 5, 4])
    // Not full: everything below the horizon was read, the cursor may go to the head.
    expect(all).toMatchObject({ full: false, held: true, through: at(11, 9) })

    const typed = sliceSegment(segment, at(5, 0), 2, ["a"])!
    expect(ids(typed.events)).toEqual([1, 3])
    expect(typed).toMatchObject({ full: true, through: at(7, 3) })

    const none = sliceSegment(segment, at(7, 3), 5, ["b"])!
    expect(none.events).toEqual([])
    expect(none.through).toEqual(at(11, 9))
  })

  it("covers only cursors it knows every following event of", () => {
    expect(covers(segment, at(5, 0))).toBe(true)
    expect(covers(segment, at(4, 99))).toBe(false)
    expect(sliceSegment(segment, at(4, 99), 10)).toBeUndefined()
    // A full segment ends at its last event: after it, nothing is known.
    const full = { ...segment, full: true }
    expect(covers(full, at(8, 5))).toBe(true)
    expect(covers(full, at(9, 4))).toBe(false)
    const rest = sliceSegment(full, at(8, 5), 10, ["b"])!
    expect(rest).toMatchObject({ events: [], full: true, through: at(9, 4) })
  })

  it("a window drops what every loop has passed and keeps at most its size", () => {
    const read = { events: [event(12, 10, "a")], head: at(12, 10), full: false, held: false, through: at(12, 10) }
    const kept = extend(segment, read, 100, at(7, 2))
    expect(kept.after).toEqual(at(7, 2))
    expect(ids(kept.events)).toEqual([3, 5, 4, 10])
    expect(kept).toMatchObject({ head: at(12, 10), held: false })
    const capped = extend(segment, read, 2)
    expect(ids(capped.events)).toEqual([4, 10])
    expect(capped.after).toEqual(at(8, 5))
  })

  it.live("loops woken together share one read; a later wake-up gets a new one", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const runner = yield* startRunner(url)
      yield* runner.run(runner.events.publishAll([{ type: "x", data: 1 }, { type: "y", data: 2 }]))
      const shared = yield* makeSharedReads(runner.sql, 100, 1000).pipe(Scope.provide(runner.scope))
      // Reads stop below the horizon of the whole Postgres server, which other test files'
      // transactions can hold back for a moment: wait (each try a fresh wake-up) for the events.
      const woken = (after: Position) =>
        Effect.suspend(() => {
          const since = performance.now()
          return Effect.map(shared.segment("one", after, since), (segment) => ({ since, segment }))
        })
      const data = (segment: Segment | undefined, after: Position) =>
        segment === undefined ? [] : sliceSegment(segment, after, 10)?.events.map((positioned) => positioned.event.data)
      const first = yield* eventually("the first two events", woken(START), ({ segment }) =>
        JSON.stringify(data(segment, START)) === "[1,2]")
      const one = first.segment!
      // Another loop woken when that read had not started yet takes the same decoded events: read once.
      const two = yield* shared.segment("two", START, first.since)
      expect(two).toBe(one)

      yield* runner.run(runner.events.publish({ type: "z", data: 3 }))
      const later = yield* eventually("the third event", woken(one.head), ({ segment }) =>
        JSON.stringify(data(segment, one.head)) === "[3]")
      expect(later.segment).not.toBe(one)
    }))

  it.live("every consumer and the live stream still get every event once, in order", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const runner = yield* startRunner(url)
      const live = yield* runner.run(runner.events.subscribe)
      const got: Record<string, Array<number>> = { all: [], typed: [], single: [], flaky: [] }
      let flakyWorks = false
      yield* runner.run(Effect.gen(function*() {
        const events = yield* Events
        const record = (name: string) => (batch: ReadonlyArray<DomainEvent>) =>
          Effect.sync(() => {
            for (const e of batch) got[name].push(e.id)
          })
        yield* events.consumeBatch("all", record("all"), { batchSize: 25 })
        yield* events.consumeBatch("typed", record("typed"), { types: ["a"] })
        yield* events.consume("single", (e) => record("single")([e]), { types: ["a", "b"], batchSize: 7 })
        // Fails every batch until told otherwise: it must neither stop nor skip the others.
        yield* events.consumeBatch(
          "flaky",
          (batch) => flakyWorks ? record("flaky")(batch) : Effect.fail("down" as const),
          { types: ["b", "c"] }
        )
      }))

      // 40 transactions of 3 events, 4 at a time.
      yield* Effect.forEach(
        Array.from({ length: 40 }, (_, n) => n),
        (n) => runner.run(runner.events.publishAll(["a", "b", "c"].map((type) => ({ type, data: { n } })))),
        { concurrency: 4, discard: true }
      )
      // The table's columns, not the text output column `id` (which would sort "108" before "97").
      const published = yield* runner.sql<{ id: string; type: string }>`
        SELECT id::text, type FROM domain_events ORDER BY domain_events.tx, domain_events.id`
      const outbox = published.map((row) => ({ id: Number(row.id), type: row.type }))
      const of = (...types: Array<string>) => outbox.filter((e) => types.includes(e.type)).map((e) => e.id)
      expect(outbox.length).toBe(120)

      const liveIds: Array<number> = []
      const reading = yield* Effect.forkChild(Effect.forever(
        Effect.map(Queue.take(live), (e) => liveIds.push(e.id))
      ))
      yield* waitUntil(
        "the working consumers and the live stream",
        () => got.all.length >= 120 && got.typed.length >= 40 && got.single.length >= 80 && liveIds.length >= 120,
        "30 seconds"
      )
      expect(got.all).toEqual(of("a", "b", "c"))
      expect(got.typed).toEqual(of("a"))
      expect(got.single).toEqual(of("a", "b"))
      expect(liveIds).toEqual(of("a", "b", "c"))
      expect(got.flaky).toEqual([])

      flakyWorks = true
      yield* waitUntil("the recovered consumer", () => got.flaky.length >= 80, "30 seconds")
      expect(got.flaky).toEqual(of("b", "c"))
      yield* Fiber.interrupt(reading)
    }))
})
