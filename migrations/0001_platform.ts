import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Tenancy, API keys and the domain-event outbox. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE organizations (
      id text PRIMARY KEY,
      slug text NOT NULL UNIQUE,
      name text NOT NULL,
      plan text NOT NULL CHECK (plan IN ('free', 'hobby', 'pro', 'enterprise')),
      project_id bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
      requests_per_minute integer,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE users (
      id text PRIMARY KEY,
      username text NOT NULL UNIQUE,
      email text NOT NULL,
      name text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE memberships (
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      role text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (org_id, user_id)
    )`
  yield* sql`
    CREATE TABLE api_keys (
      id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      name text NOT NULL,
      secret_hash text NOT NULL UNIQUE,
      scopes text[] NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_used_at timestamptz,
      revoked_at timestamptz
    )`
  yield* sql`CREATE INDEX api_keys_org_idx ON api_keys (org_id)`
  // The organization entity's request window, written back so a new host resumes the count.
  yield* sql`
    CREATE TABLE org_rate_windows (
      org_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
      window_start bigint NOT NULL,
      used integer NOT NULL
    )`
  // The outbox: ids are assigned under a transaction-level advisory lock (see Events)
  // so they become visible in id order and a reader's cursor never skips one.
  yield* sql`
    CREATE TABLE domain_events (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      type text NOT NULL,
      org_id text,
      data jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE event_consumers (
      name text PRIMARY KEY,
      last_event_id bigint NOT NULL DEFAULT 0,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
})
