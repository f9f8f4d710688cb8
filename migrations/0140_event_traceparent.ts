import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The W3C `traceparent` of the span that published an event (null when tracing was off),
 * carried into the webhook deliveries fanned out from it (and set on test pings and
 * redeliveries), so a delivery's request continues the trace of the request that caused it,
 * on any runner and after a restart (issue 32).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE domain_events ADD COLUMN traceparent text`
  yield* sql`ALTER TABLE webhook_deliveries ADD COLUMN traceparent text`
})
