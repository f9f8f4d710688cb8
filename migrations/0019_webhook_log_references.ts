import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The webhook log's hot path writes an attempt row per delivery and a delivery row per event
 * (issue 12). Their foreign keys cost Postgres a lookup and a row lock (`FOR KEY SHARE`, which
 * also writes the locked tuple) per inserted row; both references are already guaranteed by
 * the writers — an attempt is logged by the entity that claimed its delivery, and the
 * fan-out locks the webhooks it queues for (`FOR KEY SHARE`, once per webhook and batch) —
 * so the checks go, as they did for observe (0016). What `ON DELETE CASCADE` did is kept by
 * statement triggers, which cost nothing on insert.
 *
 * Logged headers are `json` (stored as sent, never queried inside) instead of `jsonb`, which
 * Postgres had to parse into its binary form for every attempt.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_delivery_seq_fkey`
  yield* sql`ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_webhook_id_fkey`
  yield* sql`
    CREATE FUNCTION webhook_deliveries_delete_of_webhooks() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
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
