import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Pull requests (spec 001 "Pull request", GUIDE §11): the requests, their reviews, review
 * requests, comments and suggestions, and the per-repository stale setting. The stale
 * timers are durable through `last_activity_at` and `stale_warned_at`: every runner
 * re-arms them from these columns at start (see src/entities/pulls/PullRequestAlarms.ts).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    ALTER TABLE repositories
      ADD COLUMN stale_enabled boolean NOT NULL DEFAULT true,
      ADD COLUMN stale_warn_days integer NOT NULL DEFAULT 30,
      ADD COLUMN stale_close_days integer NOT NULL DEFAULT 90`
  yield* sql`
    CREATE TABLE pull_requests (
      id text PRIMARY KEY,
      repo_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      number integer NOT NULL,
      title text NOT NULL,
      body text NOT NULL DEFAULT '',
      state text NOT NULL,
      source_branch text NOT NULL,
      target_branch text NOT NULL,
      author_id text NOT NULL REFERENCES users (id),
      -- The target's and the source's commits when mergeability was last computed.
      base_sha text NOT NULL,
      head_sha text NOT NULL,
      -- NULL while computing; with the paths that conflict when false.
      mergeable boolean,
      conflicts jsonb NOT NULL DEFAULT '[]',
      mergeable_state text NOT NULL DEFAULT 'unknown',
      labels text[] NOT NULL DEFAULT '{}',
      merged_at timestamptz,
      merged_by text REFERENCES users (id),
      merge_commit_sha text,
      closed_at timestamptz,
      -- {strategy, commitMessage?, deleteBranch?, enabledBy} while auto-merge is on.
      auto_merge jsonb,
      last_activity_at timestamptz NOT NULL DEFAULT now(),
      stale_warned_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (repo_id, number)
    )`
  // One open (or draft) request per source→target pair.
  yield* sql`
    CREATE UNIQUE INDEX pull_requests_open_pair_idx ON pull_requests (repo_id, source_branch, target_branch)
    WHERE state IN ('open', 'draft')`
  yield* sql`CREATE INDEX pull_requests_open_idx ON pull_requests (repo_id, state)`
  yield* sql`
    CREATE TABLE pr_reviews (
      id text PRIMARY KEY,
      pr_id text NOT NULL REFERENCES pull_requests (id) ON DELETE CASCADE,
      reviewer_id text NOT NULL REFERENCES users (id),
      state text NOT NULL,
      body text NOT NULL DEFAULT '',
      -- The head the review was given on (stale reviews are dismissed by protection rules).
      head_sha text NOT NULL,
      submitted_at timestamptz,
      dismissed_at timestamptz,
      dismiss_message text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX pr_reviews_pr_idx ON pr_reviews (pr_id, created_at)`
  yield* sql`
    CREATE TABLE pr_review_requests (
      pr_id text NOT NULL REFERENCES pull_requests (id) ON DELETE CASCADE,
      user_id text NOT NULL REFERENCES users (id),
      -- 'manual' or 'codeowners'
      source text NOT NULL DEFAULT 'manual',
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (pr_id, user_id)
    )`
  yield* sql`
    CREATE TABLE pr_comments (
      id text PRIMARY KEY,
      pr_id text NOT NULL REFERENCES pull_requests (id) ON DELETE CASCADE,
      -- NULL: written by Canopy itself (stale warnings, auto-merge failures).
      author_id text REFERENCES users (id),
      body text NOT NULL,
      path text,
      line integer,
      start_line integer,
      head_sha text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX pr_comments_pr_idx ON pr_comments (pr_id, created_at)`
  yield* sql`
    CREATE TABLE pr_suggestions (
      id text PRIMARY KEY,
      pr_id text NOT NULL REFERENCES pull_requests (id) ON DELETE CASCADE,
      comment_id text REFERENCES pr_comments (id) ON DELETE CASCADE,
      author_id text NOT NULL REFERENCES users (id),
      path text NOT NULL,
      start_line integer NOT NULL,
      end_line integer NOT NULL,
      original_lines jsonb NOT NULL,
      replacement text NOT NULL,
      head_sha text NOT NULL,
      state text NOT NULL DEFAULT 'open',
      applied_sha text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
})
