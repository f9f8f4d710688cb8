import { Cause, Duration, Effect, Exit, Schedule, Schema } from "effect"
import { Queue } from "effect"
import type { Scope } from "effect"
import type { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { insertConsumerAtHead, insertConsumerAtStart, lockCursor, moveCursor } from "./EventConsumerRows.ts"
import { type DomainEvent, isAfter, type Position, type PositionedEvent, readAfter } from "./EventLog.ts"
import { type Segment, type SharedReads, sliceSegment } from "./SharedReads.ts"

export interface ConsumeOptions {
  /** Only these event types reach the handler (the cursor still moves past the others). */
  readonly types?: ReadonlyArray<string> | undefined
  /**
   * Where a consumer seen for the first time starts; later starts always resume from the
   * stored cursor. `"beginning"` (default) delivers every event in the outbox,
   * `"now"` only those committed after the consumer's row is created (and possibly a few
   * committed just before, while an older transaction was still open).
   */
  readonly from?: "beginning" | "now" | undefined
  /** Events read per transaction. Default 50 (`consume`) or 500 (`consumeBatch`). */
  readonly batchSize?: number | undefined
}

/** Internal: a failure that was already logged and is to be retried. */
export class Retry extends Schema.TaggedError<Retry>()("Retry", {}) {}

/** Capped exponential backoff for retries after failures. */
const backoff = Schedule.min([Schedule.exponential("100 millis"), Schedule.spaced("30 seconds")]).pipe(
  Schedule.jittered
)

/**
 * Runs `self`, logging any failure or defect (interruption passes through) and retrying it
 * with `backoff` until it succeeds, so a background loop never dies of a transient error.
 */
export const retryLogged = <A, E, R>(
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

/** What a handler made of a chunk: how many of its events are done, and the failure that stopped it. */
interface Progress {
  readonly handled: number
  readonly failed?: { readonly event: DomainEvent; readonly cause: Cause.Cause<unknown> } | undefined
}

type Outcome = "caughtUp" | "more" | "busy" | "held"

/** How an idle loop waits: for `delay` on the Effect clock, or in real time while events are held. */
export interface Wait {
  readonly delay: Duration.Duration
  /** Committed events wait behind an open transaction (whose end sends no notification). */
  readonly held: boolean
}

/**
 * How long an idle loop waits for a notification: `pollInterval`, but while committed
 * events are held 10 ms, doubling up to `pollInterval` for as long as they are. Held waits
 * run in real time: they wait for Postgres, whatever clock the app runs with (TestClock).
 */
export const waitPolicy = (pollInterval: Duration.Duration) => {
  let heldDelay = 10
  return {
    after: (held: boolean): Wait => {
      if (!held) {
        heldDelay = 10
        return { delay: pollInterval, held }
      }
      const delay = Duration.min(Duration.millis(heldDelay), pollInterval)
      heldDelay *= 2
      return { delay, held }
    }
  }
}

/** A real-time sleep (`setTimeout`), unaffected by the Effect clock. */
const realSleep = (duration: Duration.Duration) =>
  Effect.callback<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), Duration.toMillis(duration))
    return Effect.sync(() => clearTimeout(timer))
  })

/**
 * Spaces a loop's passes at least `minMs` apart in real time: a burst of notifications (one
 * per publishing commit, hundreds a second under monitor load) is then read in a few passes
 * instead of one pass, and one transaction, per notification. Real time, like held waits.
 */
export const pacer = (minMs: number) => {
  let lastPass = Number.NEGATIVE_INFINITY
  return Effect.suspend(() => {
    const now = performance.now()
    const wait = lastPass + minMs - now
    lastPass = Math.max(now, lastPass + minMs)
    return wait > 0 ? realSleep(Duration.millis(wait)) : Effect.void
  })
}

/** Waits for a wake-up signal on `queue`, or until `wait` is over. */
export const nextWake = (queue: Queue.Queue<void>, wait: Wait): Effect.Effect<void> =>
  wait.held
    ? Effect.asVoid(Effect.raceFirst(Queue.take(queue), realSleep(wait.delay)))
    : Effect.asVoid(Effect.timeoutOption(Queue.take(queue), wait.delay))

/** The parts of `Events` a consumer loop needs. */
export interface ConsumerDeps {
  readonly sql: SqlClient.SqlClient
  /** A wake-up queue signalled on every NOTIFY, for the loop's lifetime. */
  readonly waker: Effect.Effect<Queue.Queue<void>, never, Scope.Scope>
  readonly pollInterval: Duration.Duration
  /** The least time between two passes of a loop (real time, ms); see `pacer`. */
  readonly minPassMs: number
  /** The runner's shared outbox reads (`SharedReads.ts`). */
  readonly shared: SharedReads
  /** How long a loop with nothing of its types to handle may leave its stored cursor behind (ms); see `pass`. */
  readonly idleCursorMs: number
}

/**
 * Starts a durable consumer loop in the current scope once its cursor row exists. Each pass
 * is one transaction: it holds the consumer's row `FOR UPDATE SKIP LOCKED` (another runner
 * working on the same consumer makes this one skip), reads up to `batchSize` events after
 * the cursor below the horizon taken *before* the row lock gave this transaction an id (see
 * `EventLog.ts`), hands them to `process` and moves the cursor past what it handled.
 * The events come from the runner's shared read when it covers the locked cursor (read
 * after this loop's last wake-up), else from the consumer's own read.
 */
export const startConsumer = Effect.fnUntraced(function*<R>(
  deps: ConsumerDeps,
  name: string,
  process: (events: ReadonlyArray<PositionedEvent>) => Effect.Effect<Progress, never, R>,
  options: ConsumeOptions & { readonly batchSize: number }
): Effect.fn.Return<void, SqlError, R | Scope.Scope> {
  const { sql } = deps
  yield* options.from === "now" ? insertConsumerAtHead(sql, name) : insertConsumerAtStart(sql, name)

  // This runner's last known cursor: where to ask the shared read from (a hint only: the
  // pass slices from the cursor it finds under the row lock).
  let known: Position | undefined
  const batch = (segment: Segment | undefined) =>
    Effect.gen(function*() {
      // The snapshot of this statement is taken before the row lock assigns a transaction id,
      // so our own transaction does not hold the horizon back.
      const locked = yield* lockCursor(sql, name)
      if (locked.length === 0) return { outcome: "busy" as Outcome, failed: undefined, cursor: known }
      const start: Position = { tx: locked[0].tx, id: locked[0].id }
      const read = (segment && sliceSegment(segment, start, options.batchSize, options.types)) ??
        (yield* readAfter(sql, {
          after: start,
          limit: options.batchSize,
          types: options.types,
          horizon: locked[0].horizon
        }))
      const progress = yield* process(read.events)
      let cursor = progress.handled === 0 ? start : read.events[progress.handled - 1].position
      if (progress.failed === undefined && isAfter(read.through, cursor)) cursor = read.through
      if (isAfter(cursor, start)) {
        yield* moveCursor(sql, name, cursor)
      }
      const outcome: Outcome = read.full ? "more" : read.held ? "held" : "caughtUp"
      return { outcome, failed: progress.failed, cursor }
    })

  // When this loop last ran its transaction (real time).
  let lockedAt = Number.NEGATIVE_INFINITY
  const pass = (since: number) =>
    Effect.gen(function*() {
      // Taken before the transaction: waiting for it holds no connection.
      const segment = known === undefined ? undefined : yield* deps.shared.segment(name, known, since)
      // Nothing of this consumer's types committed since its cursor (most events are other
      // loops' business: every monitor check is a heartbeat for the live stream): no
      // transaction. The stored cursor stays behind for up to `idleCursorMs`, so a restart
      // re-reads at most that much of what it skips anyway; the window keeps it meanwhile.
      if (segment !== undefined && known !== undefined && performance.now() - lockedAt < deps.idleCursorMs) {
        const read = sliceSegment(segment, known, options.batchSize, options.types)
        if (read !== undefined && read.events.length === 0 && !read.full) return read.held ? "held" : "caughtUp"
      }
      lockedAt = performance.now()
      const { cursor, failed, outcome } = yield* sql.withTransaction(batch(segment))
      known = cursor
      if (failed !== undefined) {
        // The event's data is not logged: it can hold personal data.
        yield* Effect.logWarning("Events: consumer handler failed, retrying", failed.cause).pipe(
          Effect.annotateLogs({ consumer: name, eventId: failed.event.id, eventType: failed.event.type })
        )
        return yield* new Retry()
      }
      return outcome
    })

  const wake = yield* deps.waker
  yield* Effect.gen(function*() {
    const waiting = waitPolicy(deps.pollInterval)
    const paced = pacer(deps.minPassMs)
    // When this loop last woke: the shared read it takes must have started since.
    let since = performance.now()
    while (true) {
      const outcome = yield* retryLogged(pass(since), "Events: consumer batch failed, retrying", { consumer: name })
      if (outcome !== "more") {
        yield* nextWake(wake, waiting.after(outcome === "held"))
        since = performance.now()
        yield* paced
      }
    }
  }).pipe(Effect.forkScoped)
})

/**
 * One event at a time, each in a savepoint: a failure keeps what the events before it did
 * and commits the cursor just before it.
 */
export const oneAtATime =
  <E, R>(sql: SqlClient.SqlClient, handler: (event: DomainEvent) => Effect.Effect<void, E, R>) =>
  (events: ReadonlyArray<PositionedEvent>): Effect.Effect<Progress, never, R> =>
    Effect.gen(function*() {
      for (let index = 0; index < events.length; index++) {
        const { event } = events[index]
        const exit = yield* Effect.exit(sql.withTransaction(Effect.suspend(() => handler(event))))
        if (Exit.isFailure(exit)) return { handled: index, failed: { event, cause: exit.cause } }
      }
      return { handled: events.length }
    })

/**
 * The whole chunk at once, in a savepoint: a failure rolls back everything the handler did
 * for the chunk and leaves the cursor before its first event.
 */
export const wholeChunk = <E, R>(
  sql: SqlClient.SqlClient,
  handler: (events: ReadonlyArray<DomainEvent>) => Effect.Effect<void, E, R>
) =>
(events: ReadonlyArray<PositionedEvent>): Effect.Effect<Progress, never, R> =>
  events.length === 0 ? Effect.succeed({ handled: 0 }) : Effect.map(
    Effect.exit(sql.withTransaction(Effect.suspend(() => handler(events.map((positioned) => positioned.event))))),
    (exit): Progress =>
      Exit.isSuccess(exit)
        ? { handled: events.length }
        : { handled: 0, failed: { event: events[0].event, cause: exit.cause } }
  )
