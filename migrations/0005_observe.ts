import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Observe: issues (error groups), the events kept by sampling, releases and the ingest windows (GUIDE §7). */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE observe_issues (
      id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      fingerprint text NOT NULL,
      title text NOT NULL,
      type text,
      culprit text,
      level text NOT NULL,
      -- unresolved | resolved | ignored
      status text NOT NULL DEFAULT 'unresolved',
      -- Every event, kept or sampled away.
      count bigint NOT NULL,
      users bigint NOT NULL DEFAULT 0,
      first_seen timestamptz NOT NULL,
      last_seen timestamptz NOT NULL,
      first_release text,
      last_release text,
      releases text[] NOT NULL DEFAULT '{}',
      environments text[] NOT NULL DEFAULT '{}',
      resolved_at timestamptz,
      -- Set when a new event reopened the resolved issue.
      regressed_at timestamptz,
      UNIQUE (org_id, fingerprint)
    )`
  yield* sql`CREATE INDEX observe_issues_last_seen_idx ON observe_issues (org_id, last_seen DESC)`
  // Distinct users per issue (the `users` counter counts first sightings). References to
  // issues are checked at commit: a group commit writes events before their issue's counters.
  yield* sql`
    CREATE TABLE observe_issue_users (
      issue_id text NOT NULL REFERENCES observe_issues (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
      user_key text NOT NULL,
      PRIMARY KEY (issue_id, user_key)
    )`
  // Stack traces stored once per distinct stack (frames with their lines): events of one
  // bug repeat the same stack, so an event row carries only its reference.
  yield* sql`
    CREATE TABLE observe_stacks (
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id text NOT NULL,
      frames json NOT NULL,
      PRIMARY KEY (org_id, id)
    )`
  yield* sql`
    CREATE TABLE observe_events (
      id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      issue_id text REFERENCES observe_issues (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
      -- The client's event_id, when it sent one.
      event_id text,
      level text NOT NULL,
      message text NOT NULL,
      timestamp timestamptz NOT NULL,
      received_at timestamptz NOT NULL,
      release text,
      environment text,
      -- How many ingested events this kept one stands for.
      sample_weight real NOT NULL DEFAULT 1,
      -- observe_stacks.id of the exception's frames (left out of data).
      stack_id text,
      -- The validated event; json, not jsonb: stored as sent, never queried inside.
      data json NOT NULL
    )`
  yield* sql`CREATE INDEX observe_events_issue_idx ON observe_events (issue_id, received_at DESC)`
  yield* sql`CREATE INDEX observe_events_client_id_idx ON observe_events (org_id, event_id) WHERE event_id IS NOT NULL`
  yield* sql`
    CREATE TABLE observe_releases (
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      version text NOT NULL,
      events bigint NOT NULL DEFAULT 0,
      errors bigint NOT NULL DEFAULT 0,
      spans bigint NOT NULL DEFAULT 0,
      error_spans bigint NOT NULL DEFAULT 0,
      new_issues integer NOT NULL DEFAULT 0,
      first_seen timestamptz NOT NULL,
      last_seen timestamptz NOT NULL,
      PRIMARY KEY (org_id, version)
    )`
  // The ingest entity's sampling window, written with each group commit so a new host resumes it.
  yield* sql`
    CREATE TABLE observe_ingest_windows (
      org_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
      window_start bigint NOT NULL,
      total integer NOT NULL,
      kept integer NOT NULL,
      previous_total integer NOT NULL
    )`
  // Spike alerts: one row per spike (GUIDE §7), also published as `observe.spike`.
  yield* sql`
    CREATE TABLE observe_alerts (
      id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      issue_id text REFERENCES observe_issues (id) ON DELETE CASCADE,
      count integer NOT NULL,
      baseline real NOT NULL,
      threshold real NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX observe_alerts_org_idx ON observe_alerts (org_id, created_at DESC)`
})
