import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Monitors, their heartbeats and the hourly uptime rollups (GUIDE §6). */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE monitors (
      id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      name text NOT NULL,
      url text NOT NULL,
      method text NOT NULL DEFAULT 'GET',
      check_type text NOT NULL DEFAULT 'http',
      frequency integer NOT NULL DEFAULT 60,
      timeout integer NOT NULL DEFAULT 30,
      expected_code integer NOT NULL DEFAULT 200,
      headers jsonb NOT NULL DEFAULT '{}',
      body text,
      assertions jsonb,
      dns_record_type text,
      expected_value text,
      degraded_threshold_ms integer,
      retries integer NOT NULL DEFAULT 1,
      retry_interval integer NOT NULL DEFAULT 20,
      active boolean NOT NULL DEFAULT true,
      -- pending | up | degraded | down | paused
      status text NOT NULL DEFAULT 'pending',
      consecutive_failures integer NOT NULL DEFAULT 0,
      -- The next slot to check; claimed by compare-and-swap so a slot is checked once.
      next_check_at timestamptz NOT NULL DEFAULT now(),
      last_checked_at timestamptz,
      -- When the current status (for uptime accounting) began.
      status_since timestamptz NOT NULL DEFAULT now(),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX monitors_org_idx ON monitors (org_id, created_at DESC)`
  yield* sql`CREATE INDEX monitors_active_idx ON monitors (active) WHERE active`
  yield* sql`
    CREATE TABLE heartbeats (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      monitor_id text NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
      -- The scheduled slot and the attempt within it (retries): one row per attempt, never two.
      slot_at timestamptz NOT NULL,
      attempt integer NOT NULL DEFAULT 0,
      checked_at timestamptz NOT NULL,
      status text NOT NULL,
      response_time_ms integer NOT NULL,
      status_code integer,
      error text,
      region text NOT NULL,
      UNIQUE (monitor_id, slot_at, attempt)
    )`
  yield* sql`CREATE INDEX heartbeats_monitor_time_idx ON heartbeats (monitor_id, checked_at DESC)`
  yield* sql`
    CREATE TABLE monitor_uptime_hourly (
      monitor_id text NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
      hour timestamptz NOT NULL,
      -- Milliseconds of the hour spent not down (up or degraded) and down; paused time is in neither.
      up_ms bigint NOT NULL DEFAULT 0,
      down_ms bigint NOT NULL DEFAULT 0,
      checks integer NOT NULL DEFAULT 0,
      failed_checks integer NOT NULL DEFAULT 0,
      response_time_sum bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (monitor_id, hour)
    )`
})
