import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The outbox without a publish lock (see `services/events/Events.ts`): every event carries
 * the top-level transaction id (xid8 as bigint) of the transaction that wrote it, readers
 * read in `(tx, id)` order only below the oldest transaction still running, and consumers
 * remember a `(tx, id)` cursor. Rows written before this migration keep `tx = 0` and the
 * cursors `last_tx = 0`, so nothing already published is skipped or read twice.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE domain_events ADD COLUMN tx bigint NOT NULL DEFAULT 0`
  yield* sql`ALTER TABLE domain_events ALTER COLUMN tx SET DEFAULT (pg_current_xact_id()::text::bigint)`
  yield* sql`CREATE INDEX domain_events_position_idx ON domain_events (tx, id)`
  yield* sql`ALTER TABLE event_consumers ADD COLUMN last_tx bigint NOT NULL DEFAULT 0`
})
