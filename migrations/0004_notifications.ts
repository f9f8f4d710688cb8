import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The durable mail outbox, monitor alert state, status-page subscribers, spent
 * bot-protection challenges and the secret signing challenges and unsubscribe links
 * (GUIDE §6), plus the monitors' optional `alertEmails`.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE mail_outbox (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      -- What the mail is about, e.g. 'monitor-alert:<event id>:<recipient>': a replayed
      -- event enqueues nothing twice.
      idempotency_key text NOT NULL UNIQUE,
      recipient text NOT NULL,
      subject text NOT NULL,
      text_body text NOT NULL,
      html_body text,
      headers jsonb NOT NULL DEFAULT '{}',
      attempts integer NOT NULL DEFAULT 0,
      -- Due time of the next attempt; a claimed row is pushed to the end of its lease.
      next_attempt_at timestamptz NOT NULL DEFAULT now(),
      last_error text,
      sent_at timestamptz,
      failed_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX mail_outbox_due_idx ON mail_outbox (next_attempt_at) WHERE sent_at IS NULL AND failed_at IS NULL`
  yield* sql`ALTER TABLE monitors ADD COLUMN alert_emails jsonb NOT NULL DEFAULT '[]'`
  yield* sql`
    CREATE TABLE monitor_alerts (
      monitor_id text PRIMARY KEY REFERENCES monitors (id) ON DELETE CASCADE,
      -- The monitor.status event that turned it down, and when.
      down_event_id bigint NOT NULL,
      down_since timestamptz NOT NULL,
      error text
    )`
  yield* sql`
    CREATE TABLE subscribers (
      id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      email text NOT NULL,
      -- null: every component
      components jsonb,
      confirm_token_hash text UNIQUE,
      confirmed_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (org_id, email)
    )`
  yield* sql`
    CREATE TABLE app_secrets (
      name text PRIMARY KEY,
      -- Encrypted with the master key (Crypto).
      ciphertext text NOT NULL
    )`
  yield* sql`
    CREATE TABLE spent_challenges (
      signature text PRIMARY KEY,
      expires_at timestamptz NOT NULL
    )`
})
