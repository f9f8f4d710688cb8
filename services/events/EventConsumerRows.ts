import { Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { decodeRows } from "../platform/Rows.ts"
import { horizonSql } from "./DomainEventRows.ts"

/*
 * The `event_consumers` table: each durable consumer's cursor in the outbox, and every
 * statement on it.
 */

/** A consumer's row as its pass locks it, with the horizon taken before the lock. */
const LockedCursor = Schema.Struct({ tx: Schema.BigInt, id: Schema.BigInt, horizon: Schema.BigInt })

const ConsumerName = Schema.Struct({ name: Schema.String })

/** Creates the consumer's row at the start of the outbox (a known consumer keeps its own). */
export const insertConsumerAtStart = (sql: SqlClient.SqlClient, name: string) =>
  sql`
    INSERT INTO event_consumers (name, last_tx, last_event_id) VALUES (${name}, 0, 0)
    ON CONFLICT (name) DO NOTHING`

/** Creates the consumer's row at the last event below the horizon (a known consumer keeps its own). */
export const insertConsumerAtHead = (sql: SqlClient.SqlClient, name: string) =>
  sql`
    INSERT INTO event_consumers (name, last_tx, last_event_id)
    SELECT ${name}, coalesce(h.tx, 0), coalesce(h.id, 0)
    FROM (SELECT ${horizonSql(sql)} AS horizon) AS s
    LEFT JOIN LATERAL (
      SELECT tx, id FROM domain_events WHERE tx < s.horizon ORDER BY tx DESC, id DESC LIMIT 1
    ) AS h ON true
    ON CONFLICT (name) DO NOTHING`

/**
 * Locks the consumer's cursor unless another pass holds it (no row then). The snapshot of
 * this statement is taken before the row lock assigns a transaction id, so the caller's own
 * transaction does not hold the horizon back.
 */
export const lockCursor = (sql: SqlClient.SqlClient, name: string) =>
  sql`
    SELECT last_tx AS tx, last_event_id AS id, ${horizonSql(sql)} AS horizon
    FROM event_consumers WHERE name = ${name} FOR UPDATE SKIP LOCKED`.pipe(decodeRows(LockedCursor))

export const moveCursor = (
  sql: SqlClient.SqlClient,
  name: string,
  cursor: { readonly tx: bigint; readonly id: bigint }
) =>
  sql`
    UPDATE event_consumers SET last_tx = ${String(cursor.tx)}::bigint,
      last_event_id = ${String(cursor.id)}::bigint, updated_at = now()
    WHERE name = ${name}`

/** Consumers idle since `activeSince` that have not reached the newest event. */
export const abandonedConsumers = (sql: SqlClient.SqlClient, activeSince: string) =>
  sql`
    SELECT name FROM event_consumers WHERE updated_at < ${activeSince}::timestamptz
      AND (last_tx, last_event_id) < (SELECT tx, id FROM domain_events ORDER BY tx DESC, id DESC LIMIT 1)
    ORDER BY name`.pipe(decodeRows(ConsumerName))

/** A consumer's distance behind the outbox: the age of its oldest unread event, and how many wait. */
export const ConsumerLagRow = Schema.Struct({
  name: Schema.String,
  lagSeconds: Schema.Number,
  behind: Schema.Number
})

/**
 * Every consumer's lag (a metrics gauge read at scrape time). Bounded work: at most
 * `maxConsumers` cursors, each one index probe on `domain_events_position_idx` for its oldest
 * unread event and a count stopped at `cap`.
 */
export const consumerLag = (sql: SqlClient.SqlClient, cap: number, maxConsumers = 200) =>
  sql`
    SELECT c.name,
      coalesce(extract(epoch FROM now() - oldest.created_at), 0)::float8 AS "lagSeconds",
      (SELECT count(*) FROM (
        SELECT 1 FROM domain_events e WHERE (e.tx, e.id) > (c.last_tx, c.last_event_id) LIMIT ${cap}
      ) AS waiting)::int AS behind
    FROM (SELECT name, last_tx, last_event_id FROM event_consumers ORDER BY name LIMIT ${maxConsumers}) AS c
    LEFT JOIN LATERAL (
      SELECT created_at FROM domain_events e
      WHERE (e.tx, e.id) > (c.last_tx, c.last_event_id) ORDER BY e.tx, e.id LIMIT 1
    ) AS oldest ON true`.pipe(decodeRows(ConsumerLagRow))
