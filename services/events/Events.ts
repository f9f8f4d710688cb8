import { PgClient } from "@effect/sql-pg"
import { Cause, Context, Duration, Effect, Layer, Option, Queue, Schema, Stream } from "effect"
import type { Scope } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"

import { currentTraceparent } from "../platform/ClientSpans.ts"
import { type CommitHint, parseHints } from "./CommitHints.ts"
import { appendAndNotify, EVENTS_CHANNEL, type NewDomainEvent, notifyAll } from "./DomainEventRows.ts"
import {
  type ConsumeOptions,
  nextWake,
  oneAtATime,
  pacer,
  retryLogged,
  startConsumer,
  waitPolicy,
  wholeChunk
} from "./EventConsumers.ts"
import { type DomainEvent, isAfter, type Position, readAfter, START } from "./EventLog.ts"
import { makeSharedReads, sliceSegment } from "./SharedReads.ts"

export type { CommitHint } from "./CommitHints.ts"
export type { ConsumeOptions } from "./EventConsumers.ts"
export type { DomainEvent } from "./EventLog.ts"
/* The outbox statements other features embed in their own (one round trip per write). */
export {
  appendSelectedStatement,
  appendStatement,
  EVENTS_CHANNEL,
  type NewDomainEvent,
  notifySql
} from "./DomainEventRows.ts"

/**
 * The one domain-event mechanism (GUIDE §1): events are written to the `domain_events`
 * outbox in the transaction that caused them, every runner is woken by LISTEN/NOTIFY
 * (plus a periodic poll), and the live stream, e-mail notifications and webhooks all read
 * the same table.
 *
 * Ordering guarantee without a publish lock (`EventLog.ts`): readers go in `(tx, id)` order
 * (the writing transaction's id, then the event's) and only below the oldest transaction
 * still running, so an event that commits late is never skipped, and publishers in any
 * number of runners commit in parallel. Rows must only ever be inserted through
 * `publish`/`publishAll` (or at least with the `tx` column's default).
 */

/**
 * A live subscriber fell more than its buffer behind the runner's reader. Its stream
 * delivers what was buffered and then fails with this error, instead of silently losing
 * events: the subscriber should resynchronise (re-read state) and subscribe again.
 */
export class EventsLagged extends Schema.TaggedError<EventsLagged>()("EventsLagged", {
  capacity: Schema.Number
}) {}

export interface EventsOptions {
  /** How often to look for new events when no notification arrives. Default 1 second. */
  readonly pollInterval?: Duration.Input | undefined
  /**
   * Events buffered per live subscriber before it is failed with `EventsLagged`. Default 1024.
   * The reader reads at most this many (and at most 1000) events at a time.
   */
  readonly liveBufferSize?: number | undefined
  /**
   * The least time between two reads of a loop woken by notifications, in ms: the live
   * reader's (default 10) and each durable consumer's (default 50). Under load every
   * publishing commit notifies every loop of every runner; pacing turns hundreds of passes
   * a second into a few, each reading what committed meanwhile.
   */
  readonly minLiveReadMs?: number | undefined
  readonly minConsumerPassMs?: number | undefined
  /**
   * How long a durable consumer with nothing of its types to handle may leave its stored
   * cursor behind, in ms (default 1000): its passes then need no transaction.
   */
  readonly idleConsumerCursorMs?: number | undefined
}

const LIVE_READ_LIMIT = 1000
/** Events per shared read (`SharedReads.ts`), and events its window keeps for loops behind. */
const SHARED_READ_LIMIT = 1000
const SHARED_WINDOW = 10_000

/**
 * Appends events to the outbox in order. Run it inside the caller's `sql.withTransaction`
 * so the events commit or roll back with the change that caused them (outside a transaction
 * it opens its own). Takes no lock: concurrent publishers commit in parallel, and readers
 * still see the events in one order without skipping (see `EventLog.ts`). Keep publishing
 * transactions short: while one is open, events committed after it started wait for it.
 */
export const publishAll = Effect.fnUntraced(function*(
  events: ReadonlyArray<NewDomainEvent>
): Effect.fn.Return<void, SqlError, SqlClient.SqlClient> {
  if (events.length === 0) return
  const sql = yield* SqlClient.SqlClient
  // NOTIFY is transactional: delivered to every runner only if and when this commits.
  const append = appendAndNotify(sql, events, yield* currentTraceparent)
  const inTransaction = Option.isSome(yield* Effect.serviceOption(sql.transactionService))
  // Joining the caller's transaction directly (no savepoint) keeps big transactions cheap.
  yield* inTransaction ? append : sql.withTransaction(append)
})

/** `publishAll` for one event. */
export const publish = (event: NewDomainEvent): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
  publishAll([event])

const make = Effect.fnUntraced(function*(options: EventsOptions = {}) {
  const sql = yield* SqlClient.SqlClient
  const pg = yield* PgClient.PgClient
  const pollInterval = Duration.fromInputUnsafe(options.pollInterval ?? "1 second")
  const liveBufferSize = options.liveBufferSize ?? 1024
  // One read is fanned out without pausing, so it must fit in a subscriber's buffer.
  const readLimit = Math.min(LIVE_READ_LIMIT, liveBufferSize)

  // Wake-up signals: one sliding(1) queue per waiting loop, so a signal is never lost
  // while the loop is busy and many signals collapse into one.
  const wakers = new Set<Queue.Queue<void>>()
  const wakeAll = () => {
    for (const waker of wakers) Queue.offerUnsafe(waker, undefined)
  }
  // Commit hints, each subscriber with its own dropping queue (a lost hint only delays).
  const hintSubscribers = new Set<Queue.Queue<CommitHint>>()
  const hints = Stream.unwrap(Effect.map(
    Effect.acquireRelease(
      Effect.tap(Queue.dropping<CommitHint>(4096), (queue) => Effect.sync(() => hintSubscribers.add(queue))),
      (queue) => Effect.sync(() => hintSubscribers.delete(queue))
    ),
    Stream.fromQueue
  ))
  const waker = Effect.acquireRelease(
    Effect.tap(Queue.sliding<void>(1), (queue) => Effect.sync(() => wakers.add(queue))),
    (queue) => Effect.sync(() => wakers.delete(queue))
  )

  // --- the listener: LISTEN canopy_events, reconnecting with backoff --------------------
  const listenSession = Effect.scoped(Effect.gen(function*() {
    const notifications = yield* retryLogged(pg.listen(EVENTS_CHANNEL), "Events: LISTEN failed, retrying")
    // Anything committed while we were not listening is picked up by this wake-up.
    wakeAll()
    return yield* Effect.forever(Effect.flatMap(Queue.takeAll(notifications), (batch) =>
      Effect.sync(() => {
        wakeAll()
        for (const notification of batch) {
          for (const hint of parseHints(notification.payload)) {
            for (const subscriber of hintSubscribers) Queue.offerUnsafe(subscriber, hint)
          }
        }
      })))
  }))
  yield* listenSession.pipe(
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause) ?
        Effect.failCause(cause) :
        Effect.andThen(
          Effect.logWarning("Events: LISTEN connection lost, reconnecting", cause),
          Effect.sleep("250 millis")
        )
    ),
    Effect.forever,
    Effect.forkScoped
  )

  // --- notifications after commit, coalesced ------------------------------------------------
  // A NOTIFY in a publishing transaction holds a database-wide lock from its commit's start
  // to its end (Postgres keeps the notification queue in commit order), so every NOTIFYing
  // commit in the cluster, WAL flush included, runs one at a time. High-rate publishers
  // (monitor checks) commit without NOTIFY and call `notifyCommitted` afterwards: this
  // runner's loops wake at once, and one NOTIFY at a time, outside any transaction, wakes
  // the others for every commit signalled before it.
  const committed = yield* Queue.sliding<void>(1)
  yield* Effect.gen(function*() {
    while (true) {
      yield* Queue.take(committed)
      wakeAll()
      yield* notifyAll(sql).pipe(
        Effect.catchCause((cause) =>
          // Others still read the events on their next poll.
          Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.logDebug("Events: NOTIFY failed", cause)
        )
      )
    }
  }).pipe(Effect.forkScoped)
  const notifyCommitted = Effect.sync(() => {
    Queue.offerUnsafe(committed, undefined)
  })

  // --- the live reader -----------------------------------------------------------------
  // Starts at the last event below the horizon: it sees what commits afterwards (and
  // possibly a few events committed just before, while an older transaction was open).
  let highWatermark: Position = (yield* readAfter(sql, { after: START, limit: 0 })).head
  const subscribers = new Set<Queue.Queue<DomainEvent, EventsLagged | Cause.Done>>()

  // One read of the outbox serves the live reader and this runner's consumers alike.
  const shared = yield* makeSharedReads(sql, SHARED_READ_LIMIT, SHARED_WINDOW)

  const readLive = (since: number) =>
    Effect.gen(function*() {
      const segment = yield* shared.segment("live", highWatermark, since)
      const read = (segment && sliceSegment(segment, highWatermark, readLimit)) ??
        (yield* readAfter(sql, { after: highWatermark, limit: readLimit }))
      for (const { event, position } of read.events) {
        highWatermark = position
        for (const subscriber of subscribers) {
          if (!Queue.offerUnsafe(subscriber, event)) {
            subscribers.delete(subscriber)
            Queue.failCauseUnsafe(subscriber, Cause.fail(new EventsLagged({ capacity: liveBufferSize })))
          }
        }
      }
      if (isAfter(read.through, highWatermark)) highWatermark = read.through
      return read
    })

  const liveWaker = yield* waker
  yield* Effect.gen(function*() {
    const waiting = waitPolicy(pollInterval)
    const paced = pacer(options.minLiveReadMs ?? 10)
    // When the reader last woke: the shared read it takes must have started since.
    let since = performance.now()
    while (true) {
      const read = yield* retryLogged(readLive(since), "Events: reading new events failed, retrying")
      if (!read.full) {
        yield* nextWake(liveWaker, waiting.after(read.held))
        since = performance.now()
        yield* paced
      } else {
        // More is waiting, possibly in the shared window already (no round trip): let the
        // subscribers take this read first. A queue hands its messages to a waiting taker on
        // a later tick, so slices offered back to back would overflow a buffer of one read.
        yield* Effect.yieldNow
      }
    }
  }).pipe(Effect.forkScoped)

  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      for (const subscriber of subscribers) Queue.endUnsafe(subscriber)
      subscribers.clear()
    })
  )

  const subscribe = Effect.acquireRelease(
    Effect.tap(
      Queue.dropping<DomainEvent, EventsLagged | Cause.Done>(liveBufferSize),
      (queue) => Effect.sync(() => subscribers.add(queue))
    ),
    (queue) =>
      Effect.suspend(() => {
        subscribers.delete(queue)
        return Queue.shutdown(queue)
      })
  )
  const live = Stream.unwrap(Effect.map(subscribe, Stream.fromQueue))

  // --- durable consumers ---------------------------------------------------------------
  const deps = {
    sql,
    waker,
    pollInterval,
    minPassMs: options.minConsumerPassMs ?? 50,
    shared,
    idleCursorMs: options.idleConsumerCursorMs ?? 1000
  }
  const consume = <E, R>(
    name: string,
    handler: (event: DomainEvent) => Effect.Effect<void, E, R>,
    consumeOptions: ConsumeOptions = {}
  ) =>
    startConsumer(deps, name, oneAtATime(sql, handler), {
      ...consumeOptions,
      batchSize: consumeOptions.batchSize ?? 50
    })

  const consumeBatch = <E, R>(
    name: string,
    handler: (events: ReadonlyArray<DomainEvent>) => Effect.Effect<void, E, R>,
    consumeOptions: ConsumeOptions = {}
  ) =>
    startConsumer(deps, name, wholeChunk(sql, handler), {
      ...consumeOptions,
      batchSize: consumeOptions.batchSize ?? 500
    })

  return Events.of({
    publish,
    publishAll,
    notifyCommitted,
    subscribe,
    live,
    hints,
    consume,
    consumeBatch
  })
})

export class Events extends Context.Service<Events, {
  /** See {@link publish}: inside the caller's transaction, commits or rolls back with it. */
  readonly publish: (event: NewDomainEvent) => Effect.Effect<void, SqlError, SqlClient.SqlClient>
  /** See {@link publishAll}: one insert, one notification for the batch, no lock. */
  readonly publishAll: (events: ReadonlyArray<NewDomainEvent>) => Effect.Effect<void, SqlError, SqlClient.SqlClient>
  /**
   * For publishers that append with `appendStatement` and no NOTIFY (see `notifySql`): call
   * it once the transaction committed. Wakes this runner's readers at once and the other
   * runners through one NOTIFY per burst of calls; if the process dies first, the others
   * read the events on their next poll.
   */
  readonly notifyCommitted: Effect.Effect<void>
  /**
   * Subscribes now and returns a queue of every event committed afterwards (possibly also a
   * few committed just before), in outbox order, as read by this runner. The subscription
   * ends with the scope; it fails with `EventsLagged` if the subscriber falls too far behind
   * and ends (`Cause.Done`) when the layer shuts down.
   */
  readonly subscribe: Effect.Effect<Queue.Dequeue<DomainEvent, EventsLagged | Cause.Done>, never, Scope.Scope>
  /** `subscribe` as a stream; the subscription starts when the stream is run. */
  readonly live: Stream.Stream<DomainEvent, EventsLagged>
  /**
   * The commit hints (`CommitHints.ts`) of every NOTIFYing publish that commits while the
   * stream runs, as they arrive: ahead of `live`, unordered, and possibly missing some.
   */
  readonly hints: Stream.Stream<CommitHint>
  /**
   * Starts a durable consumer in the current scope and returns once its cursor row exists.
   *
   * Events after the consumer's stored cursor (`event_consumers.last_tx, last_event_id`) are
   * handed to `handler` one at a time in outbox order (`EventLog.ts`), in batches: each batch
   * runs in one transaction that holds the consumer row `FOR UPDATE SKIP LOCKED` and advances
   * the cursor before committing, so the same consumer on several runners never handles an
   * event twice concurrently (the others skip while one works). The handler runs inside that
   * transaction, in a savepoint: SQL it runs through the same client commits atomically with
   * the cursor. Delivery is at least once: if the handler fails, the cursor is committed
   * just before the failed event, the failure is logged and the event retried with
   * exponential backoff (100 ms up to 30 s) until it succeeds; an interrupted batch rolls
   * back and is delivered again. Keep handlers short: they hold a connection and the row
   * lock, and an open transaction holds back every reader's horizon until it commits.
   * The loop wakes on the same notifications as `live` and polls every `pollInterval`
   * (sooner while committed events wait behind an open transaction).
   */
  readonly consume: <E, R>(
    name: string,
    handler: (event: DomainEvent) => Effect.Effect<void, E, R>,
    options?: ConsumeOptions
  ) => Effect.Effect<void, SqlError, R | Scope.Scope>
  /**
   * `consume` for handlers that work on many events at once (default `batchSize` 500): the
   * handler gets every matching event of a batch (never an empty one) in one call, inside
   * the batch's transaction (in a savepoint), and the cursor moves past the whole batch
   * once, in the same commit. At least once, all or nothing per batch: if the handler fails,
   * what it did for the batch is rolled back, the cursor stays before the batch, and the
   * batch is retried with backoff (it may then hold more events than the first time: a
   * handler must not rely on batch boundaries). An interrupted batch rolls back and is
   * delivered again.
   */
  readonly consumeBatch: <E, R>(
    name: string,
    handler: (events: ReadonlyArray<DomainEvent>) => Effect.Effect<void, E, R>,
    options?: ConsumeOptions
  ) => Effect.Effect<void, SqlError, R | Scope.Scope>
}>()("canopy/events/Events") {
  /**
   * One reader per runner: a fiber LISTENs on `canopy_events` (reconnecting after a lost
   * connection) and a second one reads the events after its position on every notification and every
   * poll interval, fanning the events out to this runner's live subscribers. Both stop when
   * the layer's scope closes.
   *
   * Buffering: every live subscriber has its own bounded queue (`liveBufferSize`) and the
   * reader never waits for it, so a slow subscriber cannot hold up the others or the reader;
   * one that overflows is failed with `EventsLagged` rather than silently losing events.
   */
  static readonly layerWith = (
    options?: EventsOptions
  ): Layer.Layer<Events, SqlError, SqlClient.SqlClient | PgClient.PgClient> => Layer.effect(Events, make(options))

  static readonly layer: Layer.Layer<Events, SqlError, SqlClient.SqlClient | PgClient.PgClient> = Events.layerWith()
}
