import { Deferred, Effect, Exit, Queue } from "effect"
import type { SqlClient } from "effect/sql"
import { isAfter, type Position, type PositionedEvent, type Read, readAfter } from "./EventLog.ts"

/**
 * One outbox read shared by the readers of a runner (the live reader and every durable
 * consumer): instead of each loop reading the same events after a notification, the runner
 * keeps a *window* of the latest events (every event after a position, in order, decoded
 * once), extends it by reading after its end, and each loop takes its own slice of it (its
 * types, its batch size, from its own cursor).
 *
 * A window only ever saves reads: a consumer still locks its cursor row, slices from the
 * cursor it finds there and reads on its own when the window does not cover that cursor
 * (another runner moved it, it is far behind the others). Correctness rests on the horizon
 * (`EventLog.ts`): every event below a read's horizon was final when it was read, so what
 * a window holds stays true, and a window extended by a read holds every event up to that
 * read's horizon, exactly as the loop's own read would.
 *
 * Freshness: a loop woken at `since` (real time) only takes a window last extended by a read
 * started at or after `since`, so it sees everything that committed before its wake-up, as
 * its own read would. Requests that come in while a read runs wait for the next one, which
 * serves them all.
 */

/** What the shared reads found: every event after `after` up to the last one (or `head`). */
export interface Segment {
  readonly after: Position
  readonly events: ReadonlyArray<PositionedEvent>
  /** The last event below the latest read's horizon. */
  readonly head: Position
  /** The latest read hit its limit: events after the last one are unknown. */
  readonly full: boolean
  readonly held: boolean
}

/** Where a reader that handled the whole segment may move: its last event if full, else `head`. */
const endOf = (segment: Segment): Position =>
  segment.full && segment.events.length > 0 ? segment.events[segment.events.length - 1].position : segment.head

/** Whether the segment knows every event right after `from` (a full one ends at its last event). */
export const covers = (segment: Segment, from: Position): boolean =>
  !isAfter(segment.after, from) && (!segment.full || isAfter(endOf(segment), from))

/** The index of the first event after `from` (binary search: events are in order). */
const firstAfter = (events: ReadonlyArray<PositionedEvent>, from: Position) => {
  let low = 0
  let high = events.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (isAfter(events[middle].position, from)) high = middle
    else low = middle + 1
  }
  return low
}

/** The segment as a read from `from` (as `readAfter` would answer), or `undefined` if not covered. */
export const sliceSegment = (
  segment: Segment,
  from: Position,
  limit: number,
  types?: ReadonlyArray<string> | undefined
): Read | undefined => {
  if (!covers(segment, from)) return undefined
  const { events, head, held } = segment
  const wanted = types === undefined ? undefined : new Set(types)
  const matched: Array<PositionedEvent> = []
  for (let index = firstAfter(events, from); index < events.length; index++) {
    const positioned = events[index]
    if (wanted !== undefined && !wanted.has(positioned.event.type)) continue
    matched.push(positioned)
    if (matched.length === limit) return { events: matched, head, full: true, held, through: positioned.position }
  }
  // Everything after `from` was looked at: the reader may move to the segment's end, and
  // reads again at once when the segment itself was full.
  return { events: matched, head, full: segment.full, held, through: endOf(segment) }
}

/**
 * A window extended by `read` (taken after the window's end), without the events every loop
 * has passed (`floor`: the slowest loop in the window), keeping at most `size` events.
 */
export const extend = (window: Segment, read: Read, size: number, floor: Position = window.after): Segment => {
  const events = window.events.concat(read.events)
  const passed = firstAfter(events, floor)
  const dropped = Math.max(passed, events.length - size)
  return {
    after: dropped > 0 ? events[dropped - 1].position : window.after,
    events: dropped > 0 ? events.slice(dropped) : events,
    head: read.head,
    full: read.full,
    held: read.held
  }
}

interface Request {
  readonly after: Position
  readonly reply: Deferred.Deferred<Segment | undefined>
}

export interface SharedReads {
  /**
   * The window, extended by a read started at or after `since` (a `performance.now()` time),
   * or `undefined` when that read failed (the caller reads on its own, and reports). The
   * window may still not cover `after` (see `sliceSegment`).
   */
  readonly segment: (reader: string, after: Position, since: number) => Effect.Effect<Segment | undefined>
}

/**
 * Starts the runner's shared reader (a fiber in the current scope): `limit` events per read,
 * a window of `size` events.
 */
export const makeSharedReads = Effect.fnUntraced(function*(sql: SqlClient.SqlClient, limit: number, size: number) {
  let window: Segment | undefined
  let extendedAt = Number.NEGATIVE_INFINITY
  let pending: Array<Request> = []
  // Where each loop last asked from.
  const positions = new Map<string, Position>()
  const floorIn = (current: Segment) => {
    let floor: Position | undefined
    for (const position of positions.values()) {
      if (isAfter(current.after, position)) continue
      if (floor === undefined || isAfter(floor, position)) floor = position
    }
    return floor
  }
  const signal = yield* Queue.sliding<void>(1)

  yield* Effect.gen(function*() {
    while (true) {
      yield* Queue.take(signal)
      if (pending.length === 0) continue
      const requests = pending
      pending = []
      // Extend the window when someone is in it; else start a new one where the earliest of
      // those ahead of it is. Loops behind the window read on their own: one far behind
      // must not drag the window back from the others.
      const current = window
      const inWindow = current !== undefined &&
        requests.some((request) => !isAfter(current.after, request.after) && !isAfter(request.after, endOf(current)))
      const ahead = current === undefined
        ? requests
        : requests.filter((request) => isAfter(request.after, endOf(current)))
      if (!inWindow && ahead.length === 0) {
        for (const request of requests) Deferred.doneUnsafe(request.reply, Effect.succeed(current))
        continue
      }
      let after = inWindow ? endOf(current!) : ahead[0].after
      if (!inWindow) { for (const request of ahead) if (isAfter(after, request.after)) after = request.after }
      const startedAt = performance.now()
      const exit = yield* Effect.exit(readAfter(sql, { after, limit }))
      if (Exit.isSuccess(exit)) {
        const base = inWindow ? current! : { after, events: [], head: after, full: false, held: false }
        window = extend(base, exit.value, size, floorIn(base))
        extendedAt = startedAt
      }
      const answer = Exit.isSuccess(exit) ? window : undefined
      for (const request of requests) Deferred.doneUnsafe(request.reply, Effect.succeed(answer))
    }
  }).pipe(Effect.forkScoped)

  const segment = (reader: string, after: Position, since: number): Effect.Effect<Segment | undefined> =>
    Effect.suspend(() => {
      positions.set(reader, after)
      if (window !== undefined && extendedAt >= since && covers(window, after)) return Effect.succeed(window)
      const reply = Deferred.makeUnsafe<Segment | undefined>()
      pending.push({ after, reply })
      Queue.offerUnsafe(signal, undefined)
      return Deferred.await(reply)
    })

  return { segment } satisfies SharedReads
})
