import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { CiRun, CiRunDetail, CiRunList, RunEvent, RunStatus, TriggerRun } from "../../schemas/ci/Ci.ts"
import { Conflict, NotFound, ValidationError } from "../../schemas/platform/Errors.ts"
import type { Plan } from "../../schemas/tenancy/Tenancy.ts"
import { runGit } from "../git/GitProcess.ts"
import { RepoCache } from "../git/RepoCache.ts"
import { refuseArchived, type RepoRecord, Repositories } from "../git/Repositories.ts"
import { makeId } from "../platform/Ids.ts"
import { CommitStatuses } from "../protection/CommitStatuses.ts"
import { ciConcurrentJobs, ciMinutesPerMonth } from "../tenancy/Plans.ts"
import {
  completeRun,
  insertRun,
  requestCancel,
  type RunRow,
  selectJobs,
  selectLog,
  selectRun,
  selectRuns,
  skipRemainingJobs,
  toJob,
  toRun
} from "./CiRunRows.ts"
import { CiSettings } from "./CiSettings.ts"
import { publishRunChange, reportStatus } from "./RunReports.ts"

export interface RunTrigger {
  readonly event: RunEvent
  readonly branch: string
  readonly commitSha: string
  readonly prNumber: number | null
  readonly rerunOf: number | null
  readonly sender: { readonly id: string; readonly name: string } | null
}

/**
 * CI runs of a repository (GUIDE §14): queueing (a run exists at once, `queued`, with the
 * commit status `ci/test` pending), reading, cancelling and re-running. Worker runners
 * execute the queue (`RunExecution`).
 */
export class CiRuns extends Context.Service<CiRuns, {
  /** Queues a run (push, pull request or manual); the caller checked that CI is enabled. */
  enqueue(repo: RepoRecord, plan: Plan, trigger: RunTrigger): Effect.Effect<CiRun>
  /** `POST …/ci/runs`: the branch head or a commit reachable from it. */
  trigger(
    repo: RepoRecord,
    plan: Plan,
    sender: RunTrigger["sender"],
    input: TriggerRun
  ): Effect.Effect<CiRun, Conflict | ValidationError>
  list(
    repo: RepoRecord,
    query: { status?: RunStatus | undefined; limit?: number | undefined }
  ): Effect.Effect<CiRunList>
  detail(repo: RepoRecord, number: number): Effect.Effect<CiRunDetail, NotFound>
  cancel(repo: RepoRecord, number: number): Effect.Effect<CiRun, NotFound | Conflict>
  rerun(repo: RepoRecord, plan: Plan, number: number, sender: RunTrigger["sender"]): Effect.Effect<
    CiRun,
    NotFound | Conflict
  >
  log(repo: RepoRecord, number: number, jobId: string): Effect.Effect<string, NotFound>
}>()("canopy/ci/CiRuns") {
  static readonly layer = Layer.effect(
    CiRuns,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const settings = yield* CiSettings
      const statuses = yield* CommitStatuses
      const repos = yield* Repositories
      const cache = yield* RepoCache

      const find = (repo: RepoRecord, number: number) =>
        selectRun(sql, repo.id, number).pipe(
          Effect.orDie,
          Effect.flatMap((row) =>
            row === undefined ? Effect.fail(new NotFound({ message: `Run #${number} not found` })) : Effect.succeed(row)
          )
        )

      const enqueue = Effect.fn("CiRuns.enqueue")(function*(repo: RepoRecord, plan: Plan, trigger: RunTrigger) {
        const row = yield* sql.withTransaction(Effect.gen(function*() {
          const inserted = yield* insertRun(sql, {
            id: makeId("run"),
            repoId: repo.id,
            orgId: repo.orgId,
            ...trigger,
            maxConcurrent: ciConcurrentJobs[plan],
            minutesLimit: ciMinutesPerMonth[plan]
          })
          yield* publishRunChange(sql, repo, inserted, { kind: "changed" })
          yield* reportStatus(statuses, repo, inserted)
          return inserted
        })).pipe(Effect.orDie)
        return toRun(row)
      })

      const notEnabled = new Conflict({ message: "CI is not enabled for this repository (PATCH …/ci/config)" })

      const trigger = Effect.fn("CiRuns.trigger")(
        function*(repo: RepoRecord, plan: Plan, sender: RunTrigger["sender"], input: TriggerRun) {
          yield* refuseArchived(repo)
          if (!(yield* settings.config(repo)).enabled) return yield* notEnabled
          const branches = yield* repos.branches(repo.orgId, repo.slug).pipe(Effect.orDie)
          const branch = branches.branches.find((candidate) => candidate.name === input.branch)
          const invalid = (message: string, path: string) =>
            new ValidationError({ message, details: [{ path, message }] })
          if (branch === undefined) return yield* invalid(`Branch '${input.branch}' not found`, "branch")
          const sha = input.commitSha ?? branch.commitSha
          if (sha !== branch.commitSha) {
            const reachable = yield* cache.use(
              repo,
              (synced) => runGit({ gitDir: synced.dir, args: ["merge-base", "--is-ancestor", sha, branch.commitSha] })
            ).pipe(
              Effect.as(true),
              Effect.catch(() => Effect.succeed(false))
            )
            if (!reachable) {
              return yield* invalid(`Commit ${sha} is not reachable from '${input.branch}'`, "commitSha")
            }
          }
          return yield* enqueue(repo, plan, {
            event: "manual",
            branch: input.branch,
            commitSha: sha,
            prNumber: null,
            rerunOf: null,
            sender
          })
        }
      )

      const list = Effect.fn("CiRuns.list")(
        function*(repo: RepoRecord, query: { status?: RunStatus | undefined; limit?: number | undefined }) {
          const { count, rows } = yield* selectRuns(sql, repo.id, query.status, query.limit ?? 30).pipe(Effect.orDie)
          return { runs: rows.map(toRun), count }
        }
      )

      const detail = Effect.fn("CiRuns.detail")(function*(repo: RepoRecord, number: number) {
        const row = yield* find(repo, number)
        const jobs = yield* selectJobs(sql, row.id).pipe(Effect.orDie)
        return { run: toRun(row), jobs: jobs.map(toJob), testSummary: row.test_summary }
      })

      /** A queued run is cancelled here; a running one by its worker, which this waits for. */
      const cancel = Effect.fn("CiRuns.cancel")(function*(repo: RepoRecord, number: number) {
        const row = yield* find(repo, number)
        if (row.status === "completed") {
          return yield* new Conflict({ message: `Run #${number} is already completed` })
        }
        if (row.status === "queued") {
          const done = yield* sql.withTransaction(Effect.gen(function*() {
            const completed = yield* completeRun(sql, row.id, {
              conclusion: "cancelled",
              message: "Cancelled",
              testSummary: null
            })
            if (completed !== undefined) {
              yield* skipRemainingJobs(sql, row.id)
              yield* publishRunChange(sql, repo, completed, { kind: "completed", testSummary: null })
              yield* reportStatus(statuses, repo, completed)
            }
            return completed
          })).pipe(Effect.orDie)
          if (done !== undefined) return toRun(done)
        }
        yield* requestCancel(sql, row.id).pipe(Effect.orDie)
        // The worker notices within a heartbeat and stops the job (SIGTERM, SIGKILL after 10 s).
        const deadline = Date.now() + 15_000
        let current: RunRow = row
        while (current.status !== "completed" && Date.now() < deadline) {
          yield* Effect.sleep("200 millis")
          current = yield* find(repo, number)
        }
        return toRun(current)
      })

      const rerun = Effect.fn("CiRuns.rerun")(
        function*(repo: RepoRecord, plan: Plan, number: number, sender: RunTrigger["sender"]) {
          const row = yield* find(repo, number)
          yield* refuseArchived(repo)
          if (!(yield* settings.config(repo)).enabled) return yield* notEnabled
          return yield* enqueue(repo, plan, {
            event: row.event,
            branch: row.branch,
            commitSha: row.commit_sha,
            prNumber: row.pr_number,
            rerunOf: row.number,
            sender
          })
        }
      )

      const log = Effect.fn("CiRuns.log")(function*(repo: RepoRecord, number: number, jobId: string) {
        const row = yield* find(repo, number)
        const text = yield* selectLog(sql, row.id, jobId).pipe(Effect.orDie)
        if (text === undefined) return yield* new NotFound({ message: `Job '${jobId}' not found` })
        return text
      })

      return CiRuns.of({ enqueue, trigger, list, detail, cancel, rerun, log })
    })
  )
}
