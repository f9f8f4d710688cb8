import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Repository issues (GUIDE §11): numbered from the repository's sequence shared with pull
 * requests (`repositories.last_number`), with their comments.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE repo_issues (
      id text PRIMARY KEY,
      repo_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
      number integer NOT NULL,
      title text NOT NULL,
      body text NOT NULL DEFAULT '',
      state text NOT NULL DEFAULT 'open',
      labels text[] NOT NULL DEFAULT '{}',
      author_id text NOT NULL,
      author_name text NOT NULL,
      closed_at timestamptz,
      -- The pull request whose merge closed the issue (Fixes #n), when one did.
      closed_by_pr_id text,
      closed_by_pr_number integer,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (repo_id, number)
    )`
  yield* sql`CREATE INDEX repo_issues_state_idx ON repo_issues (repo_id, state, number DESC)`
  yield* sql`
    CREATE TABLE repo_issue_comments (
      id text PRIMARY KEY,
      issue_id text NOT NULL REFERENCES repo_issues (id) ON DELETE CASCADE,
      author_id text NOT NULL,
      author_name text NOT NULL,
      body text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX repo_issue_comments_issue_idx ON repo_issue_comments (issue_id, created_at, id)`
})
