import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { decodeRows } from "../platform/Rows.ts"

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

/**
 * A row of the read: the horizon's `held` and `head` on every row, and one event per row
 * (all its columns null when no event matched: the read still answers the head).
 */
const ReadRow = Schema.Struct({
  held: Schema.Boolean,
  headTx: Schema.NullOr(Schema.BigInt),
  headId: Schema.NullOr(Schema.BigInt),
  tx: Schema.NullOr(Schema.BigInt),
  id: Schema.NullOr(Schema.BigInt),
  type: Schema.NullOr(Schema.String),
  orgId: Schema.NullOr(Schema.String),
  data: Schema.Unknown,
  createdAt: Schema.NullOr(Schema.Date)
})

/** SQL for the horizon of the statement's snapshot. */
export const horizonSql = (sql: SqlClient.SqlClient) =>
  sql.literal("pg_snapshot_xmin(pg_current_snapshot())::text::bigint")

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

export interface ReadOptions {
  readonly after: Position
  readonly limit: number
  readonly types?: ReadonlyArray<string> | undefined
  readonly horizon?: bigint | undefined
}

/**
 * The read as one statement. Every part walks the `(tx, id)` index from a known end: the
 * outbox only grows, so a part the planner answered with a scan of the table (as it did for
 * `held` while it was an `EXISTS … tx >= horizon`, the horizon being unknown at plan time)
 * made each read cost more with every event ever published.
 */
export const readAfterStatement = (sql: SqlClient.SqlClient, options: ReadOptions) => {
  const typeFilter = options.types === undefined ? sql.literal("") : sql`AND type IN ${sql.in(options.types)}`
  const horizon = options.horizon === undefined ? horizonSql(sql) : sql`${String(options.horizon)}::bigint`
  // `held`: a committed event at or above the horizon exists, i.e. the newest visible one is.
  return sql`
      SELECT coalesce((SELECT max(tx) FROM domain_events) >= s.horizon, false) AS held, h.tx AS "headTx", h.id AS "headId", e.tx, e.id, e.type, e.org_id AS "orgId", e.data,
        e.created_at AS "createdAt"
      FROM (SELECT ${horizon} AS horizon) AS s
      LEFT JOIN LATERAL (
        SELECT tx, id FROM domain_events WHERE tx < s.horizon ORDER BY tx DESC, id DESC LIMIT 1
      ) AS h ON true
      LEFT JOIN LATERAL (
        SELECT tx, id, type, org_id, data, created_at FROM domain_events
        WHERE (tx, id) > (${String(options.after.tx)}::bigint, ${String(options.after.id)}::bigint)
          AND tx < s.horizon ${typeFilter}
        ORDER BY tx, id LIMIT ${options.limit}
      ) AS e ON true
      ORDER BY e.tx, e.id`
}

/**
 * Reads the events after `after` below `horizon` (a bigint, or the statement's own horizon
 * when omitted), in one statement so `head` comes from the same snapshot as the events: when
 * the read is not full, every matching event up to `head` is in it and the reader may move
 * its position to `head`, past the non-matching rest.
 */
export const readAfter = (sql: SqlClient.SqlClient, options: ReadOptions): Effect.Effect<Read, SqlError> =>
  Effect.map(
    readAfterStatement(sql, options).pipe(decodeRows(ReadRow)),
    (rows) => {
      const events = rows.flatMap((row): Array<PositionedEvent> =>
        row.id === null || row.tx === null || row.type === null || row.createdAt === null ? [] : [{
          position: { tx: row.tx, id: row.id },
          event: { id: Number(row.id), type: row.type, orgId: row.orgId, data: row.data, createdAt: row.createdAt }
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
