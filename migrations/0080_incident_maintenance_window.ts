import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Scheduled maintenance: a `maintenance` incident with a window (GUIDE §6, issue 31). */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE incidents ADD COLUMN scheduled_for timestamptz, ADD COLUMN scheduled_until timestamptz`
})
