import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Scheduled maintenance (a `maintenance` incident with a window) and the organization's
 * optional logo on its status page, fetched once and served by Canopy.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE incidents ADD COLUMN scheduled_for timestamptz, ADD COLUMN scheduled_until timestamptz`
  yield* sql`ALTER TABLE organizations ADD COLUMN logo_url text`
})
