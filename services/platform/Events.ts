import { PgClient } from "@effect/sql-pg"
import { Cause, Context, Duration, Effect, Exit, Layer, Option, Queue, Schedule, Schema, Stream } from "effect"
import type { Scope } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"

/**
 * The one domain-event mechanism (GUIDE §1): events are written to the `domain_events`
 * outbox in the transaction that caused them, every runner is woken by LISTEN/NOTIFY
 * (plus a periodic poll), and the live stream, e-mail notifications and webhooks all read
 * the same table.
 *
 * Ordering guarantee: `publish` takes a transaction-level advisory lock before it inserts,
 * so publishing transactions assign ids and commit one after another. An event therefore
 * becomes visible only after every event with a smaller id, and a reader that remembers
 * the highest id it has seen (`id > cursor`) never skips one that commits late. Rows must
 * only ever be inserted through `publish`/`publishAll`.
 */

/** A committed domain event. `id` is the outbox's bigint id as a JS number (exact up to 2^53). */
export interface DomainEvent {
  readonly id: number
  readonly type: string
  readonly orgId: string | null
  readonly data: unknown
  readonly createdAt: Date
}

/** An event to publish. `data` must be JSON-serialisable; `undefined` is stored as `null`. */
export interface NewDomainEvent {
  readonly type: string
  readonly orgId?: string | null | undefined
  readonly data: unknown
}

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
}

export interface ConsumeOptions {
  /** Only these event types reach the handler (the cursor still moves past the others). */
  readonly types?: ReadonlyArray<string> | undefined
  /**
   * Where a consumer seen for the first time starts; later starts always resume from the
   * stored cursor. `"beginning"` (default) delivers every event in the outbox,
   * `"now"` only those committed after the consumer's row is created.
   */
  readonly from?: "beginning" | "now" | undefined
  /** Events handled per transaction. Default 50. */
  readonly batchSize?: number | undefined
}

/** The NOTIFY channel that wakes every runner when events commit. */
export const EVENTS_CHANNEL = "canopy_events"

/** Key of the transaction-level advisory lock that serialises publishers (any fixed int8). */
const EVENTS_LOCK_KEY = 7_363_102_031n

const LIVE_READ_LIMIT = 1000

interface EventRow {
  readonly id: bigint | number | string
  readonly type: string
  readonly orgId: string | null
  readonly data: unknown
  readonly createdAt: Date
}

const toEvent = (row: EventRow): DomainEvent => ({
  id: Number(row.id),
  type: row.type,
  orgId: row.orgId,
  data: row.data,
  createdAt: row.createdAt
})

/**
 * Appends events to the outbox in id order. Run it inside the caller's `sql.withTransaction`
 * so the events commit or roll back with the change that caused them (outside a transaction
 * it opens its own). Call it late in the transaction: the advisory lock it takes is held
 * until commit and other publishers wait for it.
 */
export const publishAll = Effect.fnUntraced(function*(
  events: ReadonlyArray<NewDomainEvent>
): Effect.fn.Return<void, SqlError, SqlClient.SqlClient> {
  if (events.length === 0) return
  const sql = yield* SqlClient.SqlClient
  const payload = JSON.stringify(events.map((event) => ({
    type: event.type,
    orgId: event.orgId ?? null,
    data: event.data === undefined ? null : event.data
  })))
  const append = Effect.gen(function*() {
    // Serialise publishers until commit: ids then become visible in id order, so a reader's
    // cursor (`id > last`) never skips an event whose transaction commits late.
    yield* sql`SELECT pg_advisory_xact_lock(${EVENTS_LOCK_KEY})`
    yield* sql`
      INSERT INTO domain_events (type, org_id, data)
      SELECT e.value->>'type', e.value->>'orgId', e.value->'data'
      FROM jsonb_array_elements(${payload}::jsonb) WITH ORDINALITY AS e(value, n)
      ORDER BY e.n`
    // NOTIFY is transactional: delivered to every runner only if and when this commits.
    yield* sql`SELECT pg_notify(${EVENTS_CHANNEL}, '')`
  })
  const inTransaction = Option.isSome(yield* Effect.serviceOption(sql.transactionService))
  // Joining the caller's transaction directly (no savepoint) keeps big transactions cheap.
  yield* inTransaction ? append : sql.withTransaction(append)
})

/** `publishAll` for one event. */
export const publish = (event: NewDomainEvent): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
  publishAll([event])

/** Internal: a failure that was already logged and is to be retried. */
class Retry extends Schema.TaggedError<Retry>()("Retry", {}) {}

type Outcome = "caughtUp" | "more" | "busy"

/** Capped exponential backoff for retries after failures. */
const backoff = Schedule.min([Schedule.exponential("100 millis"), Schedule.spaced("30 seconds")]).pipe(
  Schedule.jittered
)

/**
 * Runs `self`, logging any failure or defect (interruption passes through) and retrying it
 * with `backoff` until it succeeds, so a background loop never dies of a transient error.
 */
const retryLogged = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  message: string,
  annotations: Record<string, unknown> = {}
): Effect.Effect<A, never, R> =>
  self.pipe(
    Effect.catchCause((cause) => {
      if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
      const retry = Effect.fail(new Retry())
      const logged = cause.reasons.every((reason) => Cause.isFailReason(reason) && reason.error instanceof Retry)
      return logged ? retry : Effect.andThen(
        Effect.logWarning(message, cause).pipe(Effect.annotateLogs(annotations)),
        retry
      )
    }),
    Effect.retry(backoff),
    Effect.orDie
  )

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
  const waker = Effect.acquireRelease(
    Effect.tap(Queue.sliding<void>(1), (queue) => Effect.sync(() => wakers.add(queue))),
    (queue) => Effect.sync(() => wakers.delete(queue))
  )
  const nextWake = (queue: Queue.Queue<void>) => Effect.asVoid(Effect.timeoutOption(Queue.take(queue), pollInterval))

  // --- the listener: LISTEN canopy_events, reconnecting with backoff --------------------
  const listenSession = Effect.scoped(Effect.gen(function*() {
    const notifications = yield* retryLogged(pg.listen(EVENTS_CHANNEL), "Events: LISTEN failed, retrying")
    // Anything committed while we were not listening is picked up by this wake-up.
    wakeAll()
    return yield* Effect.forever(Effect.andThen(Queue.takeAll(notifications), Effect.sync(wakeAll)))
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

  // --- the live reader -----------------------------------------------------------------
  const [{ head }] = yield* sql<{ head: bigint }>`SELECT coalesce(max(id), 0) AS head FROM domain_events`
  let highWatermark = Number(head)
  const subscribers = new Set<Queue.Queue<DomainEvent, EventsLagged | Cause.Done>>()

  const readLive = Effect.gen(function*() {
    const rows = yield* sql<EventRow>`
      SELECT id, type, org_id AS "orgId", data, created_at AS "createdAt"
      FROM domain_events WHERE id > ${highWatermark} ORDER BY id LIMIT ${readLimit}`
    for (const row of rows) {
      const event = toEvent(row)
      highWatermark = event.id
      for (const subscriber of subscribers) {
        if (!Queue.offerUnsafe(subscriber, event)) {
          subscribers.delete(subscriber)
          Queue.failCauseUnsafe(subscriber, Cause.fail(new EventsLagged({ capacity: liveBufferSize })))
        }
      }
    }
    return rows.length === readLimit
  })

  const liveWaker = yield* waker
  yield* Effect.gen(function*() {
    while (true) {
      const more = yield* retryLogged(readLive, "Events: reading new events failed, retrying")
      if (!more) yield* nextWake(liveWaker)
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
  const consume = Effect.fnUntraced(function*<E, R>(
    name: string,
    handler: (event: DomainEvent) => Effect.Effect<void, E, R>,
    consumeOptions: ConsumeOptions = {}
  ): Effect.fn.Return<void, SqlError, R | Scope.Scope> {
    const batchSize = consumeOptions.batchSize ?? 50
    const types = consumeOptions.types
    if (consumeOptions.from === "now") {
      yield* sql`
        INSERT INTO event_consumers (name, last_event_id)
        SELECT ${name}, coalesce(max(id), 0) FROM domain_events
        ON CONFLICT (name) DO NOTHING`
    } else {
      yield* sql`INSERT INTO event_consumers (name, last_event_id) VALUES (${name}, 0) ON CONFLICT (name) DO NOTHING`
    }
    const typeFilter = types === undefined ? sql.literal("") : sql`AND type IN ${sql.in(types)}`

    const batch = Effect.gen(function*() {
      // SKIP LOCKED: while another runner works on this consumer, this one backs off.
      const locked = yield* sql<{ cursor: bigint }>`
        SELECT last_event_id AS cursor FROM event_consumers WHERE name = ${name} FOR UPDATE SKIP LOCKED`
      if (locked.length === 0) return { outcome: "busy" as Outcome, failed: undefined }
      const start = Number(locked[0].cursor)
      // `head` comes from the same snapshot as the events: when the batch is not full every
      // matching event up to `head` is in it, and (see the ordering guarantee) nothing at or
      // below `head` can still commit, so the cursor may skip the non-matching rest.
      const rows = yield* sql<EventRow & { readonly head: bigint; readonly id: EventRow["id"] | null }>`
        SELECT h.head, e.id, e.type, e.org_id AS "orgId", e.data, e.created_at AS "createdAt"
        FROM (SELECT coalesce(max(id), 0) AS head FROM domain_events) AS h
        LEFT JOIN LATERAL (
          SELECT id, type, org_id, data, created_at FROM domain_events
          WHERE id > ${start} ${typeFilter}
          ORDER BY id LIMIT ${batchSize}
        ) AS e ON true
        ORDER BY e.id`
      const events = rows.filter((row) => row.id !== null).map(toEvent)
      let cursor = start
      let failed: { readonly event: DomainEvent; readonly cause: Cause.Cause<unknown> } | undefined
      for (const event of events) {
        const exit = yield* Effect.exit(sql.withTransaction(Effect.suspend(() => handler(event))))
        if (Exit.isFailure(exit)) {
          failed = { event, cause: exit.cause }
          break
        }
        cursor = event.id
      }
      const full = events.length === batchSize
      if (failed === undefined && !full) cursor = Math.max(cursor, Number(rows[0].head))
      if (cursor > start) {
        yield* sql`UPDATE event_consumers SET last_event_id = ${cursor}, updated_at = now() WHERE name = ${name}`
      }
      return { outcome: (full ? "more" : "caughtUp") as Outcome, failed }
    })

    const pass = Effect.gen(function*() {
      const { failed, outcome } = yield* sql.withTransaction(batch)
      if (failed !== undefined) {
        // The event's data is not logged: it can hold personal data.
        yield* Effect.logWarning("Events: consumer handler failed, retrying", failed.cause).pipe(
          Effect.annotateLogs({ consumer: name, eventId: failed.event.id, eventType: failed.event.type })
        )
        return yield* new Retry()
      }
      return outcome
    })

    const wake = yield* waker
    yield* Effect.gen(function*() {
      while (true) {
        const outcome = yield* retryLogged(pass, "Events: consumer batch failed, retrying", { consumer: name })
        if (outcome !== "more") yield* nextWake(wake)
      }
    }).pipe(Effect.forkScoped)
  })

  return Events.of({
    publish,
    publishAll,
    subscribe,
    live,
    consume
  })
})

export class Events extends Context.Service<Events, {
  /** See {@link publish}: inside the caller's transaction, commits or rolls back with it. */
  readonly publish: (event: NewDomainEvent) => Effect.Effect<void, SqlError, SqlClient.SqlClient>
  /** See {@link publishAll}: one lock, one insert, one notification for the batch. */
  readonly publishAll: (events: ReadonlyArray<NewDomainEvent>) => Effect.Effect<void, SqlError, SqlClient.SqlClient>
  /**
   * Subscribes now and returns a queue of every event committed afterwards (possibly also a
   * few committed just before), in id order, as read by this runner. The subscription ends
   * with the scope; it fails with `EventsLagged` if the subscriber falls too far behind and
   * ends (`Cause.Done`) when the layer shuts down.
   */
  readonly subscribe: Effect.Effect<Queue.Dequeue<DomainEvent, EventsLagged | Cause.Done>, never, Scope.Scope>
  /** `subscribe` as a stream; the subscription starts when the stream is run. */
  readonly live: Stream.Stream<DomainEvent, EventsLagged>
  /**
   * Starts a durable consumer in the current scope and returns once its cursor row exists.
   *
   * Events after the consumer's stored cursor (`event_consumers.last_event_id`) are handed
   * to `handler` one at a time in id order, in batches: each batch runs in one transaction
   * that holds the consumer row `FOR UPDATE SKIP LOCKED` and advances the cursor before
   * committing, so the same consumer on several runners never handles an event twice
   * concurrently (the others skip while one works). The handler runs inside that
   * transaction, in a savepoint: SQL it runs through the same client commits atomically with
   * the cursor. Delivery is at least once: if the handler fails, the cursor is committed
   * just before the failed event, the failure is logged and the event retried with
   * exponential backoff (100 ms up to 30 s) until it succeeds; an interrupted batch rolls
   * back and is delivered again. Keep handlers short: they hold a connection and the row
   * lock, and an `Events.publish` inside them holds the publish lock, until the batch commits.
   * The loop wakes on the same notifications as `live` and polls every `pollInterval`.
   */
  readonly consume: <E, R>(
    name: string,
    handler: (event: DomainEvent) => Effect.Effect<void, E, R>,
    options?: ConsumeOptions
  ) => Effect.Effect<void, SqlError, R | Scope.Scope>
}>()("canopy/platform/Events") {
  /**
   * One reader per runner: a fiber LISTENs on `canopy_events` (reconnecting after a lost
   * connection) and a second one reads `id > highWatermark` on every notification and every
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
