import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * CI dependency caches (GUIDE §14 "Caches"): one archive per repository and key (project
 * type + lockfile hash) in the BlobStore under the repository's prefix; `last_used_at` drives
 * the 7-day expiry cron. Not part of any storage figure (those read `pack_bytes + lfs_bytes`).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE ci_caches (
      repo_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
      key text NOT NULL,
      blob_key text NOT NULL,
      size bigint NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_used_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (repo_id, key)
    )`
  yield* sql`CREATE INDEX ci_caches_last_used_idx ON ci_caches (last_used_at)`
})
