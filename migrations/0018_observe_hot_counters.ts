import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Every ingest group commit updates the counters of most of its issues, its releases and
 * the sampling window. Those updates change no indexed column once `last_seen` is not
 * indexed, so Postgres can make them HOT (heap-only: no new index entries, the old version
 * pruned in place) when the page has room — hence the lower fill factor. Measured on bench
 * commits: about half of Postgres's CPU per event. The issue list counts every matching
 * issue anyway (`count(*) OVER ()`), so the index only spared it a top-50 sort.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX observe_issues_last_seen_idx`
  yield* sql`ALTER TABLE observe_issues SET (fillfactor = 50)`
  yield* sql`ALTER TABLE observe_releases SET (fillfactor = 50)`
  yield* sql`ALTER TABLE observe_ingest_windows SET (fillfactor = 50)`
})
