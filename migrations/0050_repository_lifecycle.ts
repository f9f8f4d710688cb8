import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Repository lifecycle (GUIDE §16): transfers between organizations, the redirects of a
 * moved repository's old paths, the storage warning sent once per crossing, and the admin
 * API's storage above the plan ("100 GB+").
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE organizations ADD COLUMN storage_limit_bytes bigint`
  yield* sql`CREATE INDEX repositories_trash_idx ON repositories (deleted_at) WHERE deleted_at IS NOT NULL`
  yield* sql`
    CREATE TABLE repo_transfers (
      id text PRIMARY KEY,
      repo_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
      from_org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      to_org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      requested_by text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      -- pending, accepted, declined, expired (expiry is read from expires_at as well)
      state text NOT NULL DEFAULT 'pending',
      expires_at timestamptz NOT NULL,
      decided_by text REFERENCES users (id) ON DELETE SET NULL,
      decided_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  // At most one pending transfer per repository.
  yield* sql`CREATE UNIQUE INDEX repo_transfers_pending_idx ON repo_transfers (repo_id) WHERE state = 'pending'`
  yield* sql`
    CREATE TABLE repo_redirects (
      org_slug text NOT NULL,
      repo_slug text NOT NULL,
      repo_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (org_slug, repo_slug)
    )`
  yield* sql`
    CREATE TABLE storage_warnings (
      org_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
      crossed_at timestamptz NOT NULL DEFAULT now()
    )`
})
