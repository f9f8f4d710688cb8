import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { decodeRows } from "../platform/Rows.ts"

/**
 * Retention of the `domain_events` outbox. Every monitor check publishes an event, so the
 * outbox grows by a row per check (14 million a day at 10,000 monitors a minute) and would
 * fill the disk: events older than the retention period are deleted, oldest first, in
 * batches of their own transaction.
 *
 * An event is only deleted once every durable consumer (`event_consumers`) has passed it, so
 * a consumer that fell behind loses nothing. A consumer whose cursor has not moved for
 * `abandonedAfterDays` no longer holds events back: its name is gone from the code (renamed,
 * removed) or it has failed on one event for that long, and it is logged. The newest event is
 * always kept: readers find their place from it.
 */

export const EVENT_RETENTION_DAYS = 7
const ABANDONED_CONSUMER_DAYS = 30

const DAY_MS = 24 * 60 * 60 * 1000

const ConsumerName = Schema.Struct({ name: Schema.String })

/** The first event to keep, and the slowest live consumer's cursor (each null when none). */
const Bound = Schema.Struct({
  tx: Schema.NullOr(Schema.BigInt),
  id: Schema.NullOr(Schema.BigInt),
  pinTx: Schema.NullOr(Schema.BigInt),
  pinId: Schema.NullOr(Schema.BigInt)
})

/** How many events a batch deleted, and the last of them (null when none). */
const Batch = Schema.Struct({
  n: Schema.BigInt,
  lastTx: Schema.NullOr(Schema.BigInt),
  lastId: Schema.NullOr(Schema.BigInt)
})

export interface EventRetentionOptions {
  /** Now (ms). */
  readonly now: number
  readonly retentionDays?: number | undefined
  readonly abandonedAfterDays?: number | undefined
  /** Events deleted per transaction. */
  readonly batchSize?: number | undefined
}

/** Deletes the events past the retention that every live consumer has passed; returns how many. */
export const pruneEvents = (
  sql: SqlClient.SqlClient,
  options: EventRetentionOptions
): Effect.Effect<number, SqlError> =>
  Effect.gen(function*() {
    const retentionDays = options.retentionDays ?? EVENT_RETENTION_DAYS
    const abandonedAfterDays = options.abandonedAfterDays ?? ABANDONED_CONSUMER_DAYS
    const cutoff = new Date(options.now - retentionDays * DAY_MS).toISOString()
    const activeSince = new Date(options.now - abandonedAfterDays * DAY_MS).toISOString()
    const batchSize = options.batchSize ?? 10_000

    const abandoned = yield* sql`
      SELECT name FROM event_consumers WHERE updated_at < ${activeSince}::timestamptz
        AND (last_tx, last_event_id) < (SELECT tx, id FROM domain_events ORDER BY tx DESC, id DESC LIMIT 1)
      ORDER BY name`.pipe(decodeRows(ConsumerName))
    if (abandoned.length > 0) {
      yield* Effect.logWarning(`Outbox retention: consumers idle for over ${abandonedAfterDays} days hold nothing back`)
        .pipe(Effect.annotateLogs({ consumers: abandoned.map((row) => row.name).join(", ") }))
    }

    // Everything before `end` may go: the first event of the retention period (events are in
    // `(tx, id)` order, which follows their time closely), else the newest event (kept), and
    // never past the slowest live consumer's cursor.
    const [bound] = yield* sql`
      SELECT e.tx, e.id, p.last_tx AS "pinTx", p.last_event_id AS "pinId"
      FROM (SELECT 1) AS one
      LEFT JOIN LATERAL (
        SELECT tx, id FROM (
          (SELECT tx, id FROM domain_events WHERE created_at >= ${cutoff}::timestamptz ORDER BY tx, id LIMIT 1)
          UNION ALL
          (SELECT tx, id FROM domain_events ORDER BY tx DESC, id DESC LIMIT 1)
        ) AS candidates ORDER BY tx, id LIMIT 1
      ) AS e ON true
      LEFT JOIN LATERAL (
        SELECT last_tx, last_event_id FROM event_consumers WHERE updated_at >= ${activeSince}::timestamptz
        ORDER BY last_tx, last_event_id LIMIT 1
      ) AS p ON true`.pipe(decodeRows(Bound))
    if (bound.tx === null || bound.id === null) return 0
    const end = sql`(${String(bound.tx)}::bigint, ${String(bound.id)}::bigint)`
    // A consumer's cursor is the last event it handled: that one may go too.
    const pinned = bound.pinTx === null || bound.pinId === null
      ? sql.literal("")
      : sql`AND (tx, id) <= (${String(bound.pinTx)}::bigint, ${String(bound.pinId)}::bigint)`

    // Each batch starts after the last one: the index entries of deleted rows stay until
    // vacuum, and walking them again from the start made every batch slower than the last.
    let after = sql`(0::bigint, 0::bigint)`
    let deleted = 0
    while (true) {
      const [batch] = yield* sql`
        WITH doomed AS (
          SELECT ctid, tx, id FROM domain_events WHERE (tx, id) > ${after} AND (tx, id) < ${end} ${pinned}
          ORDER BY tx, id LIMIT ${batchSize}
        ), gone AS (
          DELETE FROM domain_events WHERE ctid = ANY(ARRAY(SELECT ctid FROM doomed)) RETURNING 1
        )
        SELECT (SELECT count(*) FROM gone) AS n, last.tx AS "lastTx", last.id AS "lastId"
        FROM (SELECT 1) AS one
        LEFT JOIN LATERAL (SELECT tx, id FROM doomed ORDER BY tx DESC, id DESC LIMIT 1) AS last ON true`.pipe(
        decodeRows(Batch)
      )
      deleted += Number(batch.n)
      if (Number(batch.n) < batchSize || batch.lastTx === null || batch.lastId === null) return deleted
      after = sql`(${String(batch.lastTx)}::bigint, ${String(batch.lastId)}::bigint)`
    }
  })
