import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * When a webhook starts receiving events, in the database's clock (the clock of the outbox's
 * `domain_events.created_at`): the fan-out delivers an event only to webhooks that existed
 * when it happened, even when it reaches the event late. Existing webhooks start from their
 * creation.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhooks ADD COLUMN subscribed_from timestamptz`
  yield* sql`UPDATE webhooks SET subscribed_from = created_at`
  yield* sql`ALTER TABLE webhooks ALTER COLUMN subscribed_from SET DEFAULT now(), ALTER COLUMN subscribed_from SET NOT NULL`
})
