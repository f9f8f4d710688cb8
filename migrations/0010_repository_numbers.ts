import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** One number sequence per repository, shared by pull requests and repository issues (GUIDE §11). */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE repositories ADD COLUMN last_number integer NOT NULL DEFAULT 0`
})
