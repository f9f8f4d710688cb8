import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A leaner webhook log, written once or more per delivery on the hot path:
 * - an attempt's `request_body` is NULL when it is exactly the delivery's payload (JSON
 *   webhooks, payloads up to the 64 KiB logged): the payload is stored once, not once per
 *   attempt;
 * - the retention prune finds old deliveries with a BRIN index on `created_at` (rows are
 *   appended in time order) instead of a B-tree that every version of every row updated;
 * - claiming an attempt writes `attempts` and `claimed_at`, columns no index covers, into a
 *   table that leaves room on its pages (fillfactor 50): a HOT update, with no new index
 *   entries. The timer of a claimed attempt is `claimed_at` + its retry delay (GUIDE §13
 *   schedule); `next_attempt_at` is only moved when a failed attempt is logged.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhook_attempts ALTER COLUMN request_body DROP NOT NULL`
  yield* sql`DROP INDEX webhook_deliveries_created_idx`
  yield* sql`CREATE INDEX webhook_deliveries_created_brin ON webhook_deliveries USING brin (created_at)`
  yield* sql`ALTER TABLE webhook_deliveries ADD COLUMN claimed_at timestamptz`
  yield* sql`ALTER TABLE webhook_deliveries SET (fillfactor = 50)`
})
