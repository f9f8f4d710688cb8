import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Option, Queue, Stream } from "effect"
import type { Duration } from "effect"
import { SqlClient } from "effect/sql"
import { type DomainEvent, Events, EventsLagged } from "../../services/events/Events.ts"
import { createTestDatabase } from "../support/database.ts"
import { startRunner, waitUntil } from "../support/eventsRunner.ts"
import { eventually } from "../support/wait.ts"

const takeWithin = <A, E>(queue: Queue.Dequeue<A, E>, timeout: Duration.Input = "10 seconds") =>
  Queue.take(queue).pipe(
    Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.die(new Error("timed out waiting for an event")) })
  )

const cursorOf = (sql: SqlClient.SqlClient, name: string) =>
  Effect.map(
    sql<{ lastEventId: bigint }>`SELECT last_event_id AS "lastEventId" FROM event_consumers WHERE name = ${name}`,
    (rows) => Number(rows[0].lastEventId)
  )

/** Waits until consumer `name` has stored its cursor at `id` (a handler's effects come before its pass commits). */
const cursorReaches = (sql: SqlClient.SqlClient, name: string, id: number) =>
  eventually(`${name}'s cursor at ${id}`, cursorOf(sql, name), (cursor) => cursor === id)

/** Publishes one event in its own committed transaction and returns its id. */
const publishCommitted = (type: string, data: unknown) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* Events
    return yield* sql.withTransaction(Effect.gen(function*() {
      yield* events.publish({ type, data })
      const [row] = yield* sql<{ id: bigint }>`SELECT max(id) AS id FROM domain_events`
      return Number(row.id)
    }))
  })

/**
 * A live stream subscribes when it starts running: publishes probes until `seen` (what the
 * stream collects) gets one. Generous deadline: readers wait for the server-wide horizon.
 */
const probeUntilLive = (runner: Effect.Success<ReturnType<typeof startRunner>>, seen: ReadonlyArray<unknown>) =>
  Effect.gen(function*() {
    while (seen.length === 0) {
      yield* runner.run(publishCommitted("probe", {}))
      yield* Effect.sleep("100 millis")
    }
  }).pipe(
    Effect.timeoutOrElse({ duration: "60 seconds", orElse: () => Effect.die(new Error("live never started")) })
  )

describe("Events", () => {
  it.live("an event committed on runner A reaches live subscribers and consumers on runner B", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const a = yield* startRunner(url)
      // Committed before B starts: neither B's live stream nor a `from: "now"` consumer sees it,
      // once it is below the horizon of the whole Postgres server (a transaction another test
      // file holds open keeps the horizon back, and readers start below it).
      yield* a.run(publishCommitted("old", { n: 0 }))
      yield* a.run(eventually(
        "the old event below the server's horizon",
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql<{ below: boolean }>`
            SELECT tx < pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS below
            FROM domain_events WHERE type = 'old'`),
        (rows) => rows[0]?.below === true
      ))
      // B polls only once a minute: delivery well within that proves the NOTIFY wake-up (the
      // deadline is generous because a transaction open anywhere on the server holds readers back).
      const b = yield* startRunner(url, { pollInterval: "1 minute" })
      expect(a.pg).not.toBe(b.pg)

      const live = yield* b.run(Effect.flatMap(Events, (events) => events.subscribe))
      const consumed: Array<DomainEvent> = []
      yield* b.run(
        Effect.flatMap(
          Events,
          (events) =>
            events.consume("cross-runner", (event) => Effect.sync(() => consumed.push(event)), { from: "now" })
        )
      )

      yield* a.run(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const events = yield* Events
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO organizations (id, slug, name, plan) VALUES ('org_x', 'acme', 'Acme', 'free')`
          yield* events.publish({ type: "org.created", orgId: "org_x", data: { slug: "acme", tags: ["a", 1] } })
        }))
      }))

      const event = yield* takeWithin(live, "30 seconds")
      expect(event.type).toBe("org.created")
      expect(event.orgId).toBe("org_x")
      expect(event.data).toEqual({ slug: "acme", tags: ["a", 1] })
      expect(event.createdAt).toBeInstanceOf(Date)
      expect(typeof event.id).toBe("number")

      yield* waitUntil("the consumer on runner B", () => consumed.length >= 1, "30 seconds")
      expect(consumed.map((e) => e.id)).toEqual([event.id])
      expect(consumed[0].type).toBe("org.created")
    }))

  it.live("keeps delivering after its LISTEN connection is killed", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const a = yield* startRunner(url)
      const b = yield* startRunner(url, { pollInterval: "1 minute" })
      const live = yield* b.run(b.events.subscribe)
      yield* a.run(publishCommitted("before", {}))
      expect((yield* takeWithin(live, "30 seconds")).type).toBe("before")

      // Each runner LISTENs from a fiber of its own: "started" does not mean listening yet
      // (on a busy machine runner A's LISTEN came after the first delivery, and one was killed).
      yield* eventually(
        "both LISTEN connections up",
        a.sql<{ n: number }>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND query ILIKE 'LISTEN%'`,
        (rows) => rows[0].n === 2
      )
      const killed = yield* a.sql<{ pid: number }>`
        SELECT pid, pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
        WHERE datname = current_database() AND query ILIKE 'LISTEN%'`
      expect(killed.length).toBe(2)
      // Both runners reconnect; with polling at one minute only NOTIFY can deliver these.
      yield* eventually(
        "both LISTEN connections back",
        a.sql<{ n: number }>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND query ILIKE 'LISTEN%' AND pid <> ALL(${killed.map((row) => row.pid)})`,
        (rows) => rows[0].n === 2
      )
      yield* a.run(publishCommitted("after", {}))
      expect((yield* takeWithin(live, "30 seconds")).type).toBe("after")
    }))

  it.live("a consumer started after a restart gets every committed event once, resuming after its cursor", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const publisher = yield* startRunner(url)
      const ids: Array<number> = []
      for (let n = 0; n < 6; n++) ids.push(yield* publisher.run(publishCommitted("tick", { n })))

      // First life: one event per transaction; the handler hangs on the fourth event,
      // which therefore never commits, and the runner is stopped there.
      const first = yield* startRunner(url)
      const firstSeen: Array<number> = []
      const stuck = yield* Deferred.make<void>()
      yield* first.run(Effect.flatMap(Events, (events) =>
        events.consume("restart", (event) =>
          Effect.gen(function*() {
            firstSeen.push(event.id)
            if (firstSeen.length === 4) {
              yield* Deferred.succeed(stuck, undefined)
              return yield* Effect.never
            }
          }), { batchSize: 1 })))
      yield* Deferred.await(stuck).pipe(
        Effect.timeoutOrElse({ duration: "10 seconds", orElse: () => Effect.die(new Error("consumer never started")) })
      )
      expect(firstSeen).toEqual(ids.slice(0, 4))
      yield* first.stop

      const cursor = yield* cursorOf(publisher.sql, "restart")
      expect(cursor).toBe(ids[2])

      // More events while nothing consumes.
      for (let n = 6; n < 8; n++) ids.push(yield* publisher.run(publishCommitted("tick", { n })))

      const second = yield* startRunner(url)
      const secondSeen: Array<DomainEvent> = []
      yield* second.run(
        Effect.flatMap(
          Events,
          (events) => events.consume("restart", (event) => Effect.sync(() => secondSeen.push(event)))
        )
      )
      yield* waitUntil("the restarted consumer to catch up", () => secondSeen.length >= 5)
      yield* Effect.sleep("300 millis")
      // Resumes right after the committed cursor: nothing lost, nothing committed redelivered.
      expect(secondSeen.map((e) => e.id)).toEqual(ids.slice(3))
      expect(secondSeen.map((e) => (e.data as { n: number }).n)).toEqual([3, 4, 5, 6, 7])
      yield* cursorReaches(publisher.sql, "restart", ids[7])
    }))

  it.live("an event whose transaction rolls back is never delivered", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const runner = yield* startRunner(url)
      const other = yield* startRunner(url)
      const live = yield* other.run(Effect.flatMap(Events, (events) => events.subscribe))
      const consumed: Array<string> = []
      yield* runner.run(Effect.flatMap(Events, (events) =>
        events.consume("rollback", (event) =>
          Effect.sync(() => consumed.push(event.type)))))

      const failed = yield* runner.run(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const events = yield* Events
        return yield* sql.withTransaction(Effect.gen(function*() {
          yield* events.publish({ type: "doomed", data: {} })
          return yield* Effect.fail("change failed" as const)
        })).pipe(Effect.exit)
      }))
      expect(Exit.isFailure(failed)).toBe(true)
      yield* runner.run(publishCommitted("kept", {}))

      const event = yield* takeWithin(live)
      expect(event.type).toBe("kept")
      yield* waitUntil("the consumer", () =>
        consumed.length >= 1)
      yield* Effect.sleep("300 millis")
      expect(consumed).toEqual(["kept"])
      expect(Option.isNone(yield* Queue.poll(live))).toBe(true)
      const [{ count }] = yield* runner.sql<{ count: bigint }>`SELECT count(*) AS count FROM domain_events`
      expect(Number(count)).toBe(1)
    }))

  it.live("an event that commits after a later-started publish is not skipped", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const runner = yield* startRunner(url)
      const live = yield* runner.run(Effect.flatMap(Events, (events) => events.subscribe))
      const all: Array<string> = []
      const onlyFast: Array<string> = []
      yield* runner.run(runner.events.consume("late-all", (event) => Effect.sync(() => all.push(event.type))))
      yield* runner.run(
        runner.events.consume("late-fast", (event) => Effect.sync(() => onlyFast.push(event.type)), { types: ["fast"] })
      )

      // Transaction 1 publishes first but commits late; transaction 2 publishes meanwhile.
      const slowPublished = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const slow = yield* runner.run(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const events = yield* Events
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* events.publish({ type: "slow", data: {} })
          yield* Deferred.succeed(slowPublished, undefined)
          yield* Deferred.await(release)
        }))
      })).pipe(Effect.forkChild)
      yield* Deferred.await(slowPublished)
      yield* runner.run(publishCommitted("fast", {}))
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(slow)

      const first = yield* takeWithin(live)
      const second = yield* takeWithin(live)
      expect([first.type, second.type]).toEqual(["slow", "fast"])
      expect(first.id).toBeLessThan(second.id)
      yield* waitUntil("the consumers", () => all.length >= 2 && onlyFast.length >= 1)
      yield* Effect.sleep("300 millis")
      expect(all).toEqual(["slow", "fast"])
      expect(onlyFast).toEqual(["fast"])
      yield* cursorReaches(runner.sql, "late-fast", second.id)
    }))

  it.live("publishers commit in parallel; an earlier event committed after a later one is still consumed first", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const runner = yield* startRunner(url)
      const other = yield* startRunner(url)
      const live = yield* runner.run(runner.events.subscribe)
      const seen: Array<DomainEvent> = []
      const chunks: Array<Array<string>> = []
      yield* runner.run(runner.events.consume("order-one", (event) => Effect.sync(() => seen.push(event))))
      yield* other.run(other.events.consumeBatch("order-batch", (events) =>
        Effect.sync(() => {
          chunks.push(events.map((event) => event.type))
        })))

      // The slow transaction publishes first (its transaction id and event id are the
      // smaller ones) and stays open until released.
      const release = yield* Deferred.make<void>()
      const slowPublished = yield* Deferred.make<number>()
      const slow = yield* runner.run(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const events = yield* Events
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* events.publish({ type: "slow", data: {} })
          const [row] = yield* sql<{ id: bigint }>`SELECT max(id) AS id FROM domain_events`
          yield* Deferred.succeed(slowPublished, Number(row.id))
          yield* Deferred.await(release)
        }))
      })).pipe(Effect.forkChild)
      const slowId = yield* Deferred.await(slowPublished)

      // Another runner's publisher commits meanwhile: no lock makes it wait for the slow one
      // (with a publish lock this would hang until the timeout).
      const fastId = yield* other.run(publishCommitted("fast", {})).pipe(
        Effect.timeoutOrElse({
          duration: "5 seconds",
          orElse: () => Effect.die(new Error("the second publisher waited for the first"))
        })
      )
      expect(fastId).toBeGreaterThan(slowId)
      const [{ visible }] = yield* other.sql<{ visible: number }>`
        SELECT count(*)::int AS visible FROM domain_events WHERE type = 'fast'`
      expect(visible).toBe(1)

      // Committed, but behind the open transaction: nobody reads it yet.
      yield* Effect.sleep("500 millis")
      expect(seen).toEqual([])
      expect(chunks).toEqual([])
      expect(Option.isNone(yield* Queue.poll(live))).toBe(true)

      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(slow)
      const first = yield* takeWithin(live)
      const second = yield* takeWithin(live)
      expect([first.id, second.id]).toEqual([slowId, fastId])
      yield* waitUntil("both consumers", () => seen.length >= 2 && chunks.flat().length >= 2)
      yield* Effect.sleep("300 millis")
      expect(seen.map((event) => event.type)).toEqual(["slow", "fast"])
      expect(chunks.flat()).toEqual(["slow", "fast"])
      yield* cursorReaches(runner.sql, "order-one", fastId)
      yield* cursorReaches(runner.sql, "order-batch", fastId)
    }))

  it.live("an event held behind an unrelated open transaction arrives once it ends, without a notification", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      // Polling once a minute: only the re-reads while events are held can deliver in time.
      const runner = yield* startRunner(url, { pollInterval: "1 minute" })
      const blocker = yield* startRunner(url)
      const live = yield* runner.run(runner.events.subscribe)
      const consumed: Array<string> = []
      yield* runner.run(runner.events.consume("held", (event) => Effect.sync(() => consumed.push(event.type))))

      // A transaction that writes nothing to the outbox but holds a transaction id.
      const release = yield* Deferred.make<void>()
      const started = yield* Deferred.make<void>()
      const open = yield* blocker.run(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT pg_current_xact_id()::text AS xid`
          yield* Deferred.succeed(started, undefined)
          yield* Deferred.await(release)
        }))
      })).pipe(Effect.forkChild)
      yield* Deferred.await(started)
      yield* runner.run(publishCommitted("behind", {}))
      yield* Effect.sleep("300 millis")
      expect(consumed).toEqual([])

      // Its end sends no notification.
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(open)
      expect((yield* takeWithin(live, "10 seconds")).type).toBe("behind")
      yield* waitUntil("the consumer", () => consumed.length >= 1, "10 seconds")
      expect(consumed).toEqual(["behind"])
    }))

  it.live("a batch consumer gets many events per call, retries a failed batch whole, and moves its cursor once", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const runner = yield* startRunner(url)
      yield* runner.run(runner.events.publishAll(
        Array.from({ length: 7 }, (_, n) => ({ type: n === 4 ? "skip" : "keep", data: { n } }))
      ))
      const ids = (yield* runner.sql<{ id: bigint }>`SELECT id FROM domain_events ORDER BY id`).map((r) => Number(r.id))

      const calls: Array<Array<number>> = []
      const cursorsSeen: Array<number> = []
      yield* runner.run(runner.events.consumeBatch("batches", (events) =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          calls.push(events.map((event) => (event.data as { n: number }).n))
          cursorsSeen.push(yield* cursorOf(sql, "batches"))
          // Rolled back with the failed call, committed with the retried one.
          yield* sql`INSERT INTO organizations (id, slug, name, plan)
            VALUES (${`org_${calls.length}`}, ${`b${calls.length}`}, 'B', 'free')`
          if (calls.length === 1) return yield* Effect.fail("receiver down" as const)
        }), { types: ["keep"], batchSize: 4 }))

      yield* waitUntil("the batches", () => calls.length >= 3)
      yield* Effect.sleep("300 millis")
      // Four matching events a batch; the failed first batch is delivered again whole.
      expect(calls).toEqual([[0, 1, 2, 3], [0, 1, 2, 3], [5, 6]])
      expect(cursorsSeen).toEqual([0, 0, ids[3]])
      yield* cursorReaches(runner.sql, "batches", ids[6])
      const orgs = yield* runner.sql<{ id: string }>`SELECT id FROM organizations ORDER BY id`
      expect(orgs.map((o) => o.id)).toEqual(["org_2", "org_3"])
    }))

  it.live("one consumer name on two runners handles each event exactly once", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const a = yield* startRunner(url)
      const b = yield* startRunner(url)
      const handled: Array<{ readonly runner: string; readonly id: number }> = []
      const consumer = (runner: string) =>
        Effect.flatMap(Events, (events) =>
          events.consume("shared", (event) =>
            Effect.sync(() =>
              handled.push({ runner, id: event.id })
            ).pipe(Effect.andThen(Effect.sleep("2 millis"))), {
            batchSize: 3
          }))
      yield* a.run(consumer("a"))
      yield* b.run(consumer("b"))

      const publishMany = (runner: typeof a, prefix: string) =>
        Effect.forEach(
          Array.from({ length: 10 }, (_, n) =>
            n),
          (n) =>
            runner.run(Effect.flatMap(Events, (events) =>
              n % 3 === 0 ?
                events.publishAll([{ type: `${prefix}.batch`, data: { n } }, {
                  type: `${prefix}.batch`,
                  data: { n }
                }]) :
                events.publish({ type: `${prefix}.single`, data: { n } }))).pipe(
                Effect.andThen(Effect.sleep("5 millis"))
              ),
          {
            discard: true
          }
        )
      yield* Effect.all([publishMany(a, "a"), publishMany(b, "b")], { concurrency: 2, discard: true })

      // Outbox order is (writing transaction, id): two runners publishing at once may take
      // ids in the other order than their transaction ids.
      const published = (yield* a.sql<{ id: bigint }>`SELECT id FROM domain_events ORDER BY tx, id`).map((r) =>
        Number(r.id)
      )
      expect(published.length).toBe(28)
      yield* waitUntil("both consumers to finish", () =>
        handled.length >= published.length)
      yield* Effect.sleep("500 millis")
      // Exactly once overall, and in outbox order even across the two runners.
      expect(handled.map((h) => h.id)).toEqual(published)
      expect(yield* cursorOf(a.sql, "shared")).toBe(published[published.length - 1])
    }))

  it.live("a failing handler is retried and the cursor stays before the event until it succeeds", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const runner = yield* startRunner(url)
      yield* runner.run(Effect.flatMap(Events, (events) =>
        events.publishAll([
          { type: "ok", data: { n: 1 } },
          { type: "flaky", data: { n: 2 } },
          { type: "ok", data: { n: 3 } }
        ])))
      const ids = (yield* runner.sql<{ id: bigint }>`SELECT id FROM domain_events ORDER BY id`).map((r) => Number(r.id))

      const calls: Array<string> = []
      const cursorsSeen: Array<number> = []
      let flakyAttempts = 0
      yield* runner.run(Effect.flatMap(Events, (events) =>
        events.consume("flaky", (event) =>
          Effect.gen(function*() {
            const sql = yield* SqlClient.SqlClient
            calls.push(`${event.type}:${event.id}`)
            if (event.type !== "flaky") return
            flakyAttempts++
            // The handler's SQL runs in the consumer's transaction: this row is rolled
            // back with the failed attempt and committed with the successful one.
            yield* sql`INSERT INTO organizations (id, slug, name, plan) VALUES ('org_flaky', 'flaky', 'Flaky', 'free')`
            cursorsSeen.push(yield* cursorOf(sql, "flaky"))
            if (flakyAttempts === 1) return yield* Effect.fail("webhook endpoint answered 503" as const)
          }))))

      yield* waitUntil("the retried event and the one after it", () => calls.length >= 4)
      yield* Effect.sleep("300 millis")
      expect(calls).toEqual([`ok:${ids[0]}`, `flaky:${ids[1]}`, `flaky:${ids[1]}`, `ok:${ids[2]}`])
      // The first attempt ran in the batch that started at 0; the failure committed the
      // cursor right before the flaky event, which is where the retry found it.
      expect(cursorsSeen).toEqual([0, ids[0]])
      expect(yield* cursorOf(runner.sql, "flaky")).toBe(ids[2])
      const orgs = yield* runner.sql<{ id: string }>`SELECT id FROM organizations`
      expect(orgs.map((o) => o.id)).toEqual(["org_flaky"])
    }))

  it.live("a burst larger than a subscriber's buffer, committed at once, reaches a subscriber that keeps up", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const runner = yield* startRunner(url, { liveBufferSize: 4 })
      const seen: Array<DomainEvent> = []
      // How the subscriber's stream ended, if it did (EventsLagged when a read overflowed it).
      let ended: Exit.Exit<void, unknown> | undefined
      yield* runner.run(Effect.forkScoped(
        Stream.runForEach(runner.events.live, (event) => Effect.sync(() => seen.push(event))).pipe(
          Effect.onExit((exit) => Effect.sync(() => ended = exit))
        )
      ))
      yield* probeUntilLive(runner, seen)

      // One transaction: one read brings all twelve, handed out four at a time.
      yield* runner.run(runner.events.publishAll(Array.from({ length: 12 }, (_, n) => ({ type: "burst", data: n }))))
      const burst = () => seen.filter((event) => event.type === "burst").map((event) => event.data)
      yield* waitUntil("the whole burst", () => burst().length === 12 || ended !== undefined)
      expect(ended).toBeUndefined()
      expect(burst()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
    }))

  it.live("a slow live subscriber fails with EventsLagged without holding up the others", () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const runner = yield* startRunner(url, { liveBufferSize: 4 })
      const slow = yield* runner.run(runner.events.subscribe)
      const fast: Array<DomainEvent> = []
      yield* runner.run(
        Effect.forkScoped(Stream.runForEach(runner.events.live, (event) => Effect.sync(() => fast.push(event))))
      )
      yield* probeUntilLive(runner, fast)

      for (let n = 0; n < 10; n++) {
        yield* runner.run(runner.events.publish({ type: "burst", data: { n } }))
        yield* Effect.sleep("20 millis")
      }
      yield* waitUntil("the fast subscriber", () => fast.filter((e) => e.type === "burst").length >= 10)
      expect(fast.filter((e) => e.type === "burst").map((e) => (e.data as { n: number }).n)).toEqual(
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
      )
      const ids = fast.map((e) => e.id)
      expect(ids).toEqual([...ids].sort((x, y) => x - y))

      // The slow one got what fitted in its buffer, in order, then the lag error.
      const all = (yield* runner.sql<{ id: bigint }>`SELECT id FROM domain_events ORDER BY id`).map((r) => Number(r.id))
      const slowSeen: Array<number> = []
      const error = yield* Effect.gen(function*() {
        while (true) slowSeen.push((yield* Queue.take(slow)).id)
      }).pipe(
        Effect.flip,
        Effect.timeoutOrElse({
          duration: "5 seconds",
          orElse: () => Effect.die(new Error("slow subscriber not failed"))
        })
      )
      expect(error).toBeInstanceOf(EventsLagged)
      expect(slowSeen).toEqual(all.slice(0, 4))
    }))
})
