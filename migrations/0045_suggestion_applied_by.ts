import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Who applied a suggestion (a user id), written in the transaction that moves the branch: AI
 * review skips a head that its own bot applied, however the pull request's update event
 * names its sender.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE pr_suggestions ADD COLUMN applied_by text`
})
