import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { deleteEventBatch, retentionBound } from "./DomainEventRows.ts"
import { abandonedConsumers } from "./EventConsumerRows.ts"

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

    const abandoned = yield* abandonedConsumers(sql, activeSince)
    if (abandoned.length > 0) {
      yield* Effect.logWarning(`Outbox retention: consumers idle for over ${abandonedAfterDays} days hold nothing back`)
        .pipe(Effect.annotateLogs({ consumers: abandoned.map((row) => row.name).join(", ") }))
    }

    // Everything before `end` may go: the first event of the retention period (events are in
    // `(tx, id)` order, which follows their time closely), else the newest event (kept), and
    // never past the slowest live consumer's cursor.
    const [bound] = yield* retentionBound(sql, cutoff, activeSince)
    if (bound.tx === null || bound.id === null) return 0
    const end = { tx: bound.tx, id: bound.id }
    // A consumer's cursor is the last event it handled: that one may go too.
    const pin = bound.pinTx === null || bound.pinId === null ? null : { tx: bound.pinTx, id: bound.pinId }

    // Each batch starts after the last one: the index entries of deleted rows stay until
    // vacuum, and walking them again from the start made every batch slower than the last.
    let after = { tx: 0n, id: 0n }
    let deleted = 0
    while (true) {
      const [batch] = yield* deleteEventBatch(sql, { after, end, pin, limit: batchSize })
      deleted += Number(batch.n)
      if (Number(batch.n) < batchSize || batch.lastTx === null || batch.lastId === null) return deleted
      after = { tx: batch.lastTx, id: batch.lastId }
    }
  })
