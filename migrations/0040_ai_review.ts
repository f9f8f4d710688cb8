import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * AI review (GUIDE §15): settings per repository (the provider key encrypted), reviews per
 * pull request head, and the AI's suggestions in the same `pr_suggestions` table as human
 * ones (`source`, `severity`, `category`, `state` with `dismissed`, `dismiss_reason`).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE ai_settings (
      repo_id text PRIMARY KEY REFERENCES repositories (id) ON DELETE CASCADE,
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      enabled boolean NOT NULL DEFAULT false,
      model_provider text NOT NULL DEFAULT 'openai',
      model_name text NOT NULL DEFAULT 'gpt-4o-mini',
      base_url text,
      -- Crypto ciphertext bound to the organization, the repository and the purpose; never returned.
      api_key_enc text,
      auto_review_prs boolean NOT NULL DEFAULT true,
      review_drafts boolean NOT NULL DEFAULT false,
      autonomy_level text NOT NULL DEFAULT 'suggest',
      require_human_approval boolean NOT NULL DEFAULT true,
      focus_areas jsonb NOT NULL DEFAULT '["security","performance","best_practices"]'::jsonb,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE ai_reviews (
      id text PRIMARY KEY,
      pr_id text NOT NULL REFERENCES pull_requests (id) ON DELETE CASCADE,
      repo_id text NOT NULL,
      org_id text NOT NULL,
      seq bigserial NOT NULL,
      head_sha text NOT NULL,
      trigger text NOT NULL,
      status text NOT NULL DEFAULT 'queued',
      summary text,
      overall_sentiment text,
      suggestions_count integer NOT NULL DEFAULT 0,
      security_issues integer NOT NULL DEFAULT 0,
      performance_issues integer NOT NULL DEFAULT 0,
      provider text NOT NULL,
      model text NOT NULL,
      input_tokens integer NOT NULL DEFAULT 0,
      output_tokens integer NOT NULL DEFAULT 0,
      skipped_files jsonb NOT NULL DEFAULT '[]'::jsonb,
      error text,
      created_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz,
      completed_at timestamptz
    )`
  yield* sql`CREATE INDEX ai_reviews_pr ON ai_reviews (pr_id, seq DESC)`
  yield* sql`
    ALTER TABLE pr_suggestions
      ADD COLUMN source text NOT NULL DEFAULT 'user',
      ADD COLUMN review_id text REFERENCES ai_reviews (id) ON DELETE SET NULL,
      ADD COLUMN severity text,
      ADD COLUMN category text,
      ADD COLUMN title text,
      ADD COLUMN dismiss_reason text,
      ALTER COLUMN replacement DROP NOT NULL`
})
