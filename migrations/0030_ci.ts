import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * CI (GUIDE §14): configuration and variables per repository, runs with their jobs (the
 * queue is the `queued` runs, claimed by worker runners), and the per-repository run numbers.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE ci_configs (
      repo_id text PRIMARY KEY REFERENCES repositories (id) ON DELETE CASCADE,
      enabled boolean NOT NULL DEFAULT false,
      project_type text NOT NULL DEFAULT 'auto',
      install_command text,
      test_command text,
      lint_command text,
      build_command text,
      timeout integer NOT NULL DEFAULT 600,
      cache_enabled boolean NOT NULL DEFAULT true,
      trigger_on_push boolean NOT NULL DEFAULT true,
      trigger_on_pr boolean NOT NULL DEFAULT true,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE ci_variables (
      repo_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
      name text NOT NULL,
      secret boolean NOT NULL,
      -- plain value of a non-secret variable, ciphertext (Crypto) of a secret one
      value text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (repo_id, name)
    )`
  yield* sql`
    CREATE TABLE ci_run_numbers (
      repo_id text PRIMARY KEY REFERENCES repositories (id) ON DELETE CASCADE,
      last integer NOT NULL
    )`
  yield* sql`
    CREATE TABLE ci_runs (
      seq bigint GENERATED ALWAYS AS IDENTITY,
      id text PRIMARY KEY,
      repo_id text NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
      org_id text NOT NULL,
      number integer NOT NULL,
      event text NOT NULL CHECK (event IN ('push', 'pull_request', 'manual')),
      branch text NOT NULL,
      commit_sha text NOT NULL,
      pr_number integer,
      rerun_of integer,
      sender jsonb,
      -- the organization's plan figures when the run was created (the queue reads no other table)
      max_concurrent integer NOT NULL,
      minutes_limit integer,
      status text NOT NULL CHECK (status IN ('queued', 'running', 'completed')),
      conclusion text CHECK (conclusion IN ('success', 'failure', 'error', 'cancelled')),
      message text,
      cancel_requested boolean NOT NULL DEFAULT false,
      -- the worker runner holding the run, and its last sign of life
      runner text,
      heartbeat_at timestamptz,
      test_summary jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz,
      completed_at timestamptz,
      UNIQUE (repo_id, number)
    )`
  yield* sql`CREATE INDEX ci_runs_queue_idx ON ci_runs (org_id, seq) WHERE status <> 'completed'`
  yield* sql`CREATE INDEX ci_runs_queued_idx ON ci_runs (seq) WHERE status = 'queued'`
  yield* sql`CREATE INDEX ci_runs_repo_idx ON ci_runs (repo_id, number DESC)`
  yield* sql`
    CREATE TABLE ci_jobs (
      id text PRIMARY KEY,
      run_id text NOT NULL REFERENCES ci_runs (id) ON DELETE CASCADE,
      position integer NOT NULL,
      name text NOT NULL,
      command text NOT NULL,
      status text NOT NULL CHECK (status IN ('queued', 'running', 'completed')),
      conclusion text CHECK (conclusion IN ('success', 'failure', 'error', 'cancelled', 'skipped')),
      exit_code integer,
      message text,
      log text NOT NULL DEFAULT '',
      -- minutes billed (each job rounded up to a minute)
      minutes integer NOT NULL DEFAULT 0,
      started_at timestamptz,
      completed_at timestamptz,
      UNIQUE (run_id, position)
    )`
  yield* sql`CREATE INDEX ci_jobs_started_idx ON ci_jobs (started_at) WHERE minutes > 0`
})
