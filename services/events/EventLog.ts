import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { readAfterRows, type ReadOptions } from "./DomainEventRows.ts"

/**
 * Reading the `domain_events` outbox in order, without a publish lock.
 *
 * Every event row carries `tx`, the top-level transaction id (xid8, as bigint) of the
 * transaction that wrote it (a column default), and `id`, its identity. Readers go in
 * `(tx, id)` order and only below the *horizon*: `pg_snapshot_xmin(pg_current_snapshot())`,
 * the oldest transaction id still running anywhere on the server. Every transaction below
 * the horizon has ended (its rows are visible or never will be) and every transaction that
 * starts later gets a larger id, so nothing can ever appear below the horizon again: a
 * reader that remembers the last position it handled never skips an event, however late
 * its transaction commits, while publishers commit in parallel. The price: a transaction
 * that stays open (any transaction holding an id, not only publishers) holds the horizon
 * back, so later events wait for it (delayed, never lost). Prior art: the xid8 outbox in
 * https://event-driven.io/en/ordering_in_postgres_outbox/ (and PgQ's snapshot batches).
 */

/** A committed domain event. `id` is the outbox's bigint id as a JS number (exact up to 2^53). */
export interface DomainEvent {
  readonly id: number
  readonly type: string
  readonly orgId: string | null
  readonly data: unknown
  readonly createdAt: Date
  /** The W3C `traceparent` of the span that published it; null (or absent) when tracing was off. */
  readonly traceparent?: string | null
}

/** A reader's place in the outbox: after the event at `(tx, id)` (`0, 0`: the beginning). */
export interface Position {
  readonly tx: bigint
  readonly id: bigint
}

export const START: Position = { tx: 0n, id: 0n }

export const isAfter = (a: Position, b: Position) => a.tx > b.tx || (a.tx === b.tx && a.id > b.id)

/** An event with its position. */
export interface PositionedEvent {
  readonly event: DomainEvent
  readonly position: Position
}

export { horizonSql, readAfterStatement, type ReadOptions } from "./DomainEventRows.ts"

/** What one read found. */
export interface Read {
  /** Up to `limit` matching events after the position, below the horizon, in order. */
  readonly events: ReadonlyArray<PositionedEvent>
  /** The last event below the horizon (matching or not), or the start position if none. */
  readonly head: Position
  /** Whether `limit` events came back (there may be more below the horizon). */
  readonly full: boolean
  /** Whether committed events wait above the horizon (behind a transaction still open). */
  readonly held: boolean
  /**
   * Every matching event after the read's start and up to here is in `events`: a reader
   * that handled them all may move its position here (the last event when `full`, else `head`).
   */
  readonly through: Position
}

/**
 * Reads the events after `after` below `horizon` (a bigint, or the statement's own horizon
 * when omitted), in one statement so `head` comes from the same snapshot as the events: when
 * the read is not full, every matching event up to `head` is in it and the reader may move
 * its position to `head`, past the non-matching rest.
 */
export const readAfter = (sql: SqlClient.SqlClient, options: ReadOptions): Effect.Effect<Read, SqlError> =>
  Effect.map(
    readAfterRows(sql, options),
    (rows) => {
      const events = rows.flatMap((row): Array<PositionedEvent> =>
        row.id === null || row.tx === null || row.type === null || row.createdAt === null ? [] : [{
          position: { tx: row.tx, id: row.id },
          event: {
            id: Number(row.id),
            type: row.type,
            orgId: row.orgId,
            data: row.data,
            createdAt: row.createdAt,
            traceparent: row.traceparent
          }
        }]
      )
      const first = rows[0]
      const head = first === undefined || first.headTx === null || first.headId === null
        ? START
        : { tx: first.headTx, id: first.headId }
      const full = events.length === options.limit
      const through = full && events.length > 0 ? events[events.length - 1].position : head
      return { events, head, full, held: first?.held === true, through }
    }
  )
