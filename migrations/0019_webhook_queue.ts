import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The webhook log's hot path (issue 12) writes a delivery row per event and, per attempt, an
 * attempt row and the delivery's outcome.
 *
 * - **The queue is its own small table.** `webhook_queue` holds one row per pending delivery
 *   (its webhook, its timer, its place in the queue), indexed in claim order; the row goes when
 *   the delivery succeeds or fails for good. `webhook_deliveries_due_idx`, partial on
 *   `status = 'pending'`, made every outcome a non-HOT update (a new entry in each of the
 *   table's B-trees, ~26 µs of the ~35 µs Postgres spent logging a success); with no index on
 *   `status` or `next_attempt_at`, logging an outcome is a HOT update, and the claim already
 *   was. The delivery row keeps `status`, `next_attempt_at`, `attempts` and `claimed_at` for
 *   the log and the claim rules; the queue row's `next_attempt_at` always equals its
 *   delivery's (both are written in the same statements), which is how it is found.
 * - **No foreign keys on the log.** They cost a lookup and a row lock (`FOR KEY SHARE`, which
 *   also writes the locked tuple) per inserted row; the writers already guarantee both
 *   references — an attempt is logged by the entity that claimed its delivery, and the fan-out
 *   locks the webhooks it queues for (`FOR KEY SHARE`, once per webhook and batch) — so the
 *   checks go, as they did for observe (0016). What `ON DELETE CASCADE` did is kept by statement
 *   triggers, which cost nothing on insert.
 * - **Logged headers are `json`** (stored as sent, never queried inside) instead of `jsonb`,
 *   which Postgres had to convert for every attempt.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE webhook_queue (
      webhook_id text NOT NULL,
      -- Always its delivery's next_attempt_at.
      next_attempt_at timestamptz NOT NULL,
      seq bigint NOT NULL
    )`
  yield* sql`CREATE INDEX webhook_queue_due_idx ON webhook_queue (webhook_id, next_attempt_at, seq)`
  yield* sql`
    INSERT INTO webhook_queue (webhook_id, next_attempt_at, seq)
    SELECT webhook_id, next_attempt_at, seq FROM webhook_deliveries WHERE status = 'pending'`
  yield* sql`DROP INDEX webhook_deliveries_due_idx`
  yield* sql`ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_delivery_seq_fkey`
  yield* sql`ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_webhook_id_fkey`
  yield* sql`
    CREATE FUNCTION webhook_deliveries_delete_of_webhooks() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM webhook_queue WHERE webhook_id IN (SELECT id FROM deleted_webhooks);
      DELETE FROM webhook_deliveries WHERE webhook_id IN (SELECT id FROM deleted_webhooks);
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER webhook_deliveries_cascade AFTER DELETE ON webhooks
    REFERENCING OLD TABLE AS deleted_webhooks
    FOR EACH STATEMENT EXECUTE FUNCTION webhook_deliveries_delete_of_webhooks()`
  yield* sql`
    CREATE FUNCTION webhook_attempts_delete_of_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM webhook_attempts WHERE delivery_seq IN (SELECT seq FROM deleted_deliveries);
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER webhook_attempts_cascade AFTER DELETE ON webhook_deliveries
    REFERENCING OLD TABLE AS deleted_deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION webhook_attempts_delete_of_deliveries()`
  yield* sql`
    ALTER TABLE webhook_attempts
      ALTER COLUMN request_headers TYPE json USING request_headers::json,
      ALTER COLUMN response_headers TYPE json USING response_headers::json`
})
