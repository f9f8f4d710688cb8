import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Webhooks (GUIDE §13): the hooks, their durable delivery queue (pending deliveries are the
 * queue, `next_attempt_at` the durable timer) and the log of every attempt.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE webhooks (
      id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      -- NULL for an organization webhook; the repository id for a repository webhook.
      repo_id text,
      url text NOT NULL,
      -- Crypto.encrypt with the organization's key; never returned.
      secret_enc text,
      content_type text NOT NULL DEFAULT 'application/json',
      events text[] NOT NULL,
      is_active boolean NOT NULL DEFAULT true,
      max_retries integer NOT NULL DEFAULT 3,
      retry_interval_seconds integer NOT NULL DEFAULT 60,
      -- First failed attempt since the last success: 5 days of failures disable the hook.
      failing_since timestamptz,
      disabled_reason text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX webhooks_org_idx ON webhooks (org_id, repo_id, created_at DESC)`
  yield* sql`
    CREATE TABLE webhook_deliveries (
      -- Queue order: deliveries of a webhook go out in this order (events in commit order).
      seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      id text NOT NULL UNIQUE,
      webhook_id text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
      event text NOT NULL,
      -- The payload's exact JSON text: every attempt sends (and signs) the same bytes.
      payload text NOT NULL,
      -- pending | success | failed
      status text NOT NULL DEFAULT 'pending',
      -- Attempts claimed so far; an attempt is claimed (committed) before it is sent.
      attempts integer NOT NULL DEFAULT 0,
      -- When the next attempt is due (the durable timer); for a claimed attempt, when the
      -- retry after it is due should the runner die while sending.
      next_attempt_at timestamptz NOT NULL,
      response_code integer,
      duration_ms integer,
      delivered_at timestamptz,
      redelivery boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX webhook_deliveries_log_idx ON webhook_deliveries (webhook_id, seq DESC)`
  yield* sql`
    CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (webhook_id, next_attempt_at, seq)
    WHERE status = 'pending'`
  yield* sql`CREATE INDEX webhook_deliveries_created_idx ON webhook_deliveries (created_at)`
  yield* sql`
    CREATE TABLE webhook_attempts (
      delivery_seq bigint NOT NULL REFERENCES webhook_deliveries (seq) ON DELETE CASCADE,
      attempt integer NOT NULL,
      started_at timestamptz NOT NULL,
      duration_ms integer NOT NULL,
      request_headers jsonb NOT NULL,
      -- First 64 KiB.
      request_body text NOT NULL,
      response_code integer,
      response_headers jsonb,
      response_body text,
      error text,
      PRIMARY KEY (delivery_seq, attempt)
    )`
})
