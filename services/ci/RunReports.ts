import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { CiJob, TestSummary } from "../../schemas/ci/Ci.ts"
import { CiJobCompleted, CiRunChanged, CiRunCompleted, CiRunStarted } from "../../schemas/ci/Ci.ts"
import type { StatusState } from "../../schemas/protection/CommitStatuses.ts"
import { publishAll } from "../events/Events.ts"
import type { RepoRecord } from "../git/Repositories.ts"
import type { CommitStatuses } from "../protection/CommitStatuses.ts"
import { type RunRow, toRun } from "./CiRunRows.ts"

/** The context CI reports its commit status under (GUIDE §14). */
export const CI_CONTEXT = "ci/test"

const repository = (repo: RepoRecord) => ({ id: repo.id, name: repo.name, fullName: `${repo.orgSlug}/${repo.slug}` })

/**
 * The events of a run change (GUIDE §14): `ci.run` for the live stream on every change, and
 * the webhook events `ci.run_started`, `ci.job_completed`, `ci.run_completed`.
 */
export const publishRunChange = (
  sql: SqlClient.SqlClient,
  repo: RepoRecord,
  row: RunRow,
  change:
    | { readonly kind: "changed"; readonly job?: CiJob | undefined }
    | { readonly kind: "started" }
    | { readonly kind: "job_completed"; readonly job: CiJob }
    | { readonly kind: "completed"; readonly testSummary: TestSummary | null }
) => {
  const run = toRun(row)
  const base = { repository: repository(repo), sender: row.sender, run, timestamp: new Date().toISOString() }
  const live = CiRunChanged.make(repo.orgId, {
    repository: base.repository,
    run,
    ...("job" in change && change.job !== undefined ? { job: change.job } : {})
  })
  const events = [live]
  if (change.kind === "started") events.push(CiRunStarted.make(repo.orgId, base))
  if (change.kind === "job_completed") events.push(CiJobCompleted.make(repo.orgId, { ...base, job: change.job }))
  if (change.kind === "completed") {
    events.push(CiRunCompleted.make(repo.orgId, { ...base, testSummary: change.testSummary }))
  }
  return publishAll(events).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie)
}

/** The commit status of a run: pending while queued or running, then by its conclusion. */
export const statusOf = (row: RunRow): { state: StatusState; description: string } => {
  if (row.status !== "completed") {
    return { state: "pending", description: row.status === "queued" ? "Queued" : "Running" }
  }
  switch (row.conclusion) {
    case "success":
      return { state: "success", description: `Run #${row.number} passed` }
    case "failure":
      return { state: "failure", description: row.message ?? `Run #${row.number} failed` }
    case "cancelled":
      return { state: "error", description: `Run #${row.number} was cancelled` }
    default:
      return { state: "error", description: row.message ?? `Run #${row.number} errored` }
  }
}

/** Reports `ci/test` on the run's commit through the commit-status service (merge checks read it). */
export const reportStatus = (statuses: CommitStatuses["Service"], repo: RepoRecord, row: RunRow) => {
  const { description, state } = statusOf(row)
  return statuses.create(repo, row.commit_sha, null, {
    state,
    context: CI_CONTEXT,
    description: description.slice(0, 1000)
  }).pipe(Effect.asVoid)
}
