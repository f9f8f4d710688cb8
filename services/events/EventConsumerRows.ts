import { Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { decodeRows } from "../platform/Rows.ts"

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
