import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Each monitor remembers the cluster shard its entity lives on (and the shard count it was
 * computed with), so a runner's sweep reads only the monitors of the shards it holds.
 * Filled in by the sweep; NULL until then.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE monitors ADD COLUMN shard integer, ADD COLUMN shard_count integer`
  yield* sql`CREATE INDEX monitors_active_shard ON monitors (shard) WHERE active`
})
