import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Branch protection (GUIDE §12): rules per repository, commit statuses, users' GPG keys
 * (signed commits) and the audit trail of bypasses.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE branch_protection_rules (
      id text PRIMARY KEY,
      repo_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
      branch_pattern text NOT NULL,
      require_pull_request boolean NOT NULL,
      required_approvals integer NOT NULL,
      dismiss_stale_reviews boolean NOT NULL,
      require_code_owner_review boolean NOT NULL,
      require_signed_commits boolean NOT NULL,
      require_linear_history boolean NOT NULL,
      allow_force_push boolean NOT NULL,
      allow_deletions boolean NOT NULL,
      -- usernames, as given (resolved when a push is checked)
      restrict_push_users text[] NOT NULL,
      require_status_checks boolean NOT NULL,
      required_status_checks text[] NOT NULL,
      bypass_users text[] NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX branch_protection_rules_repo_idx ON branch_protection_rules (repo_id, created_at)`
  yield* sql`
    CREATE TABLE commit_statuses (
      seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      id text NOT NULL UNIQUE,
      repo_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
      sha text NOT NULL,
      state text NOT NULL CHECK (state IN ('pending', 'success', 'failure', 'error')),
      context text NOT NULL,
      description text,
      target_url text,
      creator_id text REFERENCES users (id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX commit_statuses_sha_idx ON commit_statuses (repo_id, sha, context, seq DESC)`
  yield* sql`
    CREATE TABLE gpg_keys (
      id text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      name text,
      key_id text NOT NULL,
      fingerprint text NOT NULL,
      subkey_ids text[] NOT NULL,
      emails text[] NOT NULL,
      armored text NOT NULL,
      expires_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (user_id, fingerprint)
    )`
  yield* sql`
    CREATE TABLE audit_log (
      seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      id text NOT NULL UNIQUE,
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      action text NOT NULL,
      actor_id text NOT NULL,
      actor_username text NOT NULL,
      repo_id text,
      repo_full_name text,
      ref text,
      rule_ids text[] NOT NULL,
      detail text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX audit_log_org_idx ON audit_log (org_id, created_at DESC)`
})
