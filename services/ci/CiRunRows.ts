import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { CiJob, CiRun, JobConclusion, RunConclusion, RunEvent, TestSummary } from "../../schemas/ci/Ci.ts"
import {
  JobConclusion as JobConclusionSchema,
  JobStatus,
  RunConclusion as RunConclusionSchema
} from "../../schemas/ci/Ci.ts"
import { RunEvent as RunEventSchema, RunStatus, TestSummary as TestSummarySchema } from "../../schemas/ci/Ci.ts"
import { decodeRows } from "../platform/Rows.ts"

/** The statements of `ci_runs`, `ci_jobs` and `ci_run_numbers`; the queue is the `queued` runs. */

/**
 * The NOTIFY channel that wakes an organization's CI queue (payload: the organization's id):
 * a run was queued or completed. Sent on commit, so the woken claim sees the row.
 */
export const CI_CHANNEL = "canopy_ci"

export const RunRow = Schema.Struct({
  id: Schema.String,
  repo_id: Schema.String,
  org_id: Schema.String,
  number: Schema.Int,
  event: RunEventSchema,
  branch: Schema.String,
  commit_sha: Schema.String,
  pr_number: Schema.NullOr(Schema.Int),
  rerun_of: Schema.NullOr(Schema.Int),
  sender: Schema.NullOr(Schema.Struct({ id: Schema.String, name: Schema.String })),
  status: RunStatus,
  conclusion: Schema.NullOr(RunConclusionSchema),
  message: Schema.NullOr(Schema.String),
  cancel_requested: Schema.Boolean,
  minutes_limit: Schema.NullOr(Schema.Int),
  test_summary: Schema.NullOr(TestSummarySchema),
  created_at: Schema.Date,
  started_at: Schema.NullOr(Schema.Date),
  completed_at: Schema.NullOr(Schema.Date)
})
export type RunRow = typeof RunRow.Type

const RUN_COLUMNS = `id, repo_id, org_id, number, event, branch, commit_sha, pr_number, rerun_of, sender, status,
  conclusion, message, cancel_requested, minutes_limit, test_summary, created_at, started_at, completed_at`

const seconds = (from: Date | null, to: Date | null) =>
  from === null ? null : Math.max(0, Math.round(((to ?? new Date()).getTime() - from.getTime()) / 1000))

export const toRun = (row: RunRow): CiRun => ({
  id: row.id,
  number: row.number,
  status: row.status,
  conclusion: row.conclusion,
  event: row.event,
  branch: row.branch,
  commitSha: row.commit_sha,
  prNumber: row.pr_number,
  rerunOf: row.rerun_of,
  message: row.message,
  duration: seconds(row.started_at, row.completed_at),
  createdAt: row.created_at.toISOString(),
  startedAt: row.started_at?.toISOString() ?? null,
  completedAt: row.completed_at?.toISOString() ?? null
})

export const JobRow = Schema.Struct({
  id: Schema.String,
  run_id: Schema.String,
  position: Schema.Int,
  name: Schema.String,
  command: Schema.String,
  status: JobStatus,
  conclusion: Schema.NullOr(JobConclusionSchema),
  exit_code: Schema.NullOr(Schema.Int),
  message: Schema.NullOr(Schema.String),
  started_at: Schema.NullOr(Schema.Date),
  completed_at: Schema.NullOr(Schema.Date)
})
export type JobRow = typeof JobRow.Type

const JOB_COLUMNS = `id, run_id, position, name, command, status, conclusion, exit_code, message, started_at,
  completed_at`

export const toJob = (row: JobRow): CiJob => ({
  id: row.id,
  name: row.name,
  command: row.command,
  status: row.status,
  conclusion: row.conclusion,
  exitCode: row.exit_code,
  message: row.message,
  startedAt: row.started_at?.toISOString() ?? null,
  completedAt: row.completed_at?.toISOString() ?? null,
  duration: seconds(row.started_at, row.completed_at)
})

export interface NewRun {
  readonly id: string
  readonly repoId: string
  readonly orgId: string
  readonly event: RunEvent
  readonly branch: string
  readonly commitSha: string
  readonly prNumber: number | null
  readonly rerunOf: number | null
  readonly sender: { readonly id: string; readonly name: string } | null
  readonly maxConcurrent: number
  readonly minutesLimit: number | null
}

/** Queues a run with the repository's next run number; NOTIFY wakes the organization's queue on commit. */
export const insertRun = (sql: SqlClient.SqlClient, run: NewRun) =>
  sql`
    WITH numbered AS (
      INSERT INTO ci_run_numbers (repo_id, last) VALUES (${run.repoId}, 1)
      ON CONFLICT (repo_id) DO UPDATE SET last = ci_run_numbers.last + 1
      RETURNING last
    ), inserted AS (
      INSERT INTO ci_runs (id, repo_id, org_id, number, event, branch, commit_sha, pr_number, rerun_of, sender,
                           status, max_concurrent, minutes_limit)
      SELECT ${run.id}, ${run.repoId}, ${run.orgId}, last, ${run.event}, ${run.branch}, ${run.commitSha},
             ${run.prNumber}, ${run.rerunOf}, ${run.sender === null ? null : JSON.stringify(run.sender)}::jsonb,
             'queued', ${run.maxConcurrent}, ${run.minutesLimit}
      FROM numbered
      RETURNING ${sql.literal(RUN_COLUMNS)}
    )
    SELECT *, pg_notify(${CI_CHANNEL}, org_id) IS NULL AS notified FROM inserted`.pipe(
    decodeRows(RunRow),
    Effect.map((rows) => rows[0])
  )

export const selectRun = (sql: SqlClient.SqlClient, repoId: string, number: number) =>
  sql`SELECT ${sql.literal(RUN_COLUMNS)} FROM ci_runs WHERE repo_id = ${repoId} AND number = ${number}`.pipe(
    decodeRows(RunRow),
    Effect.map((rows) => rows[0] as RunRow | undefined)
  )

export const selectRunById = (sql: SqlClient.SqlClient, id: string) =>
  sql`SELECT ${sql.literal(RUN_COLUMNS)} FROM ci_runs WHERE id = ${id}`.pipe(
    decodeRows(RunRow),
    Effect.map((rows) => rows[0] as RunRow | undefined)
  )

export const selectRuns = (sql: SqlClient.SqlClient, repoId: string, status: string | undefined, limit: number) =>
  Effect.all([
    sql`
      SELECT ${sql.literal(RUN_COLUMNS)} FROM ci_runs
      WHERE repo_id = ${repoId} ${status === undefined ? sql.literal("") : sql`AND status = ${status}`}
      ORDER BY number DESC LIMIT ${limit}`.pipe(decodeRows(RunRow)),
    sql<{ n: number }>`
      SELECT count(*)::int AS n FROM ci_runs
      WHERE repo_id = ${repoId} ${status === undefined ? sql.literal("") : sql`AND status = ${status}`}`
  ]).pipe(Effect.map(([rows, [count]]) => ({ rows, count: Number(count.n) })))

export const selectJobs = (sql: SqlClient.SqlClient, runId: string) =>
  sql`SELECT ${sql.literal(JOB_COLUMNS)} FROM ci_jobs WHERE run_id = ${runId} ORDER BY position`.pipe(
    decodeRows(JobRow)
  )

export const selectLog = (sql: SqlClient.SqlClient, runId: string, jobId: string) =>
  sql<{ log: string }>`SELECT log FROM ci_jobs WHERE run_id = ${runId} AND id = ${jobId}`.pipe(
    Effect.map((rows) => rows[0]?.log)
  )

/**
 * Takes the organization's oldest queued run for `runner` when the organization has a free
 * slot (its running runs below the plan's concurrency, cluster-wide). Claims of one
 * organization are serialised by a transaction advisory lock, so two runners never both fill
 * its last slot (its queue entity lives on one runner, but a shard on the move may briefly
 * have two).
 */
export const claimRun = (sql: SqlClient.SqlClient, runner: string, orgId: string) =>
  sql.withTransaction(
    Effect.gen(function*() {
      yield* sql`SELECT pg_advisory_xact_lock(hashtext('canopy_ci_claim'), hashtext(${orgId}))`
      return yield* sql`
        WITH candidate AS (
          SELECT id, max_concurrent FROM ci_runs WHERE org_id = ${orgId} AND status = 'queued' ORDER BY seq LIMIT 1
        )
        UPDATE ci_runs SET status = 'running', runner = ${runner}, heartbeat_at = now(), started_at = now()
        WHERE id = (SELECT id FROM candidate)
          AND (SELECT count(*) FROM ci_runs WHERE org_id = ${orgId} AND status = 'running')
            < (SELECT max_concurrent FROM candidate)
        RETURNING ${sql.literal(RUN_COLUMNS)}`.pipe(
        decodeRows(RunRow),
        Effect.map((rows) => rows[0] as RunRow | undefined)
      )
    })
  )

/**
 * Organizations whose oldest queued run could be claimed now (a free slot under the plan's
 * concurrency), oldest run first: what the `ci` sweep wakes.
 */
export const claimableOrganizations = (sql: SqlClient.SqlClient, limit: number) =>
  sql<{ org_id: string }>`
    SELECT q.org_id FROM (
      SELECT DISTINCT ON (org_id) org_id, seq, max_concurrent FROM ci_runs
      WHERE status = 'queued' ORDER BY org_id, seq
    ) q
    WHERE (SELECT count(*) FROM ci_runs r WHERE r.org_id = q.org_id AND r.status = 'running') < q.max_concurrent
    ORDER BY q.seq LIMIT ${limit}`.pipe(Effect.map((rows) => rows.map((row) => row.org_id)))

/** Minutes an organization's jobs used this calendar month (UTC). */
export const minutesUsed = (sql: SqlClient.SqlClient, orgId: string) =>
  sql<{ n: number }>`
    SELECT COALESCE(sum(j.minutes), 0)::int AS n FROM ci_jobs j JOIN ci_runs r ON r.id = j.run_id
    WHERE r.org_id = ${orgId} AND j.started_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`
    .pipe(Effect.map((rows) => Number(rows[0]?.n ?? 0)))

export const insertJobs = (
  sql: SqlClient.SqlClient,
  runId: string,
  jobs: ReadonlyArray<{ readonly id: string; readonly name: string; readonly command: string }>
) =>
  sql`
    INSERT INTO ci_jobs (id, run_id, position, name, command, status)
    SELECT j.id, ${runId}, j.position, j.name, j.command, 'queued'
    FROM jsonb_to_recordset(${JSON.stringify(jobs.map((job, position) => ({ ...job, position })))}::jsonb)
      AS j(id text, position int, name text, command text)`

export const startJob = (sql: SqlClient.SqlClient, jobId: string) =>
  sql`UPDATE ci_jobs SET status = 'running', started_at = now() WHERE id = ${jobId}
      RETURNING ${sql.literal(JOB_COLUMNS)}`.pipe(decodeRows(JobRow), Effect.map((rows) => rows[0]))

export const appendLog = (sql: SqlClient.SqlClient, jobId: string, text: string) =>
  sql`UPDATE ci_jobs SET log = log || ${text} WHERE id = ${jobId}`

export const completeJob = (
  sql: SqlClient.SqlClient,
  jobId: string,
  outcome: { conclusion: JobConclusion; exitCode: number | null; message: string | null }
) =>
  sql`
    UPDATE ci_jobs SET status = 'completed', conclusion = ${outcome.conclusion}, exit_code = ${outcome.exitCode},
      message = ${outcome.message}, completed_at = now(),
      minutes = CASE WHEN started_at IS NULL THEN 0
                     ELSE GREATEST(1, ceil(extract(epoch FROM now() - started_at) / 60))::int END
    WHERE id = ${jobId} AND status = 'running'
    RETURNING ${sql.literal(JOB_COLUMNS)}`.pipe(decodeRows(JobRow), Effect.map((rows) => rows[0] as JobRow | undefined))

/** Marks the run's jobs that did not run `skipped`. */
export const skipRemainingJobs = (sql: SqlClient.SqlClient, runId: string) =>
  sql`UPDATE ci_jobs SET status = 'completed', conclusion = 'skipped' WHERE run_id = ${runId} AND status = 'queued'`

/**
 * Completes a run that is not completed yet; NOTIFY wakes its organization's queue (a slot is
 * free). `runner` stays: it tells which runner executed the run.
 */
export const completeRun = (
  sql: SqlClient.SqlClient,
  runId: string,
  outcome: { conclusion: RunConclusion; message: string | null; testSummary: TestSummary | null }
) =>
  sql`
    WITH done AS (
      UPDATE ci_runs SET status = 'completed', conclusion = ${outcome.conclusion},
        message = COALESCE(${outcome.message}, message),
        test_summary = ${outcome.testSummary === null ? null : JSON.stringify(outcome.testSummary)}::jsonb,
        started_at = COALESCE(started_at, now()), completed_at = now()
      WHERE id = ${runId} AND status <> 'completed'
      RETURNING ${sql.literal(RUN_COLUMNS)}
    )
    SELECT *, pg_notify(${CI_CHANNEL}, org_id) IS NULL AS notified FROM done`.pipe(
    decodeRows(RunRow),
    Effect.map((rows) => rows[0] as RunRow | undefined)
  )

export const requestCancel = (sql: SqlClient.SqlClient, runId: string) =>
  sql`UPDATE ci_runs SET cancel_requested = true WHERE id = ${runId} AND status <> 'completed' RETURNING 1`.pipe(
    Effect.map((rows) => rows.length > 0)
  )

/**
 * Records that `runner` is alive for the runs `ids` it executes (only those: a run it claimed
 * but never started is left to the lost-run sweep); returns the ones it still holds and
 * whether each was cancelled.
 */
export const heartbeat = (sql: SqlClient.SqlClient, runner: string, ids: ReadonlyArray<string>) =>
  sql<{ id: string; cancel_requested: boolean }>`
    UPDATE ci_runs SET heartbeat_at = now()
    WHERE runner = ${runner} AND status = 'running' AND id = ANY(${ids}::text[])
    RETURNING id, cancel_requested`.pipe(
    Effect.map((rows) => new Map(rows.map((row) => [row.id, row.cancel_requested])))
  )

/** Running runs whose runner has not been heard of for `staleSeconds`. */
export const lostRuns = (sql: SqlClient.SqlClient, staleSeconds: number) =>
  sql<{ id: string }>`
    SELECT id FROM ci_runs
    WHERE status = 'running' AND heartbeat_at < now() - make_interval(secs => ${staleSeconds})`.pipe(
    Effect.map((rows) => rows.map((row) => row.id))
  )

/** The jobs a lost runner left running become `error` ("runner lost"). */
export const abandonRunningJobs = (sql: SqlClient.SqlClient, runId: string, message: string) =>
  sql`
    UPDATE ci_jobs SET status = 'completed', conclusion = 'error', message = ${message}, completed_at = now(),
      minutes = GREATEST(1, ceil(extract(epoch FROM now() - started_at) / 60))::int
    WHERE run_id = ${runId} AND status = 'running'`

/** Runs waiting for a slot, counted up to `cap` on the partial `ci_runs_queued_idx` (a metrics gauge). */
export const queuedRunCount = (sql: SqlClient.SqlClient, cap: number) =>
  sql`SELECT count(*)::int AS queued FROM (SELECT 1 FROM ci_runs WHERE status = 'queued' LIMIT ${cap}) AS q`.pipe(
    decodeRows(Schema.Struct({ queued: Schema.Number }))
  )
