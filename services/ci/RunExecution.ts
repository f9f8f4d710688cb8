import { Context, Deferred, Duration, Effect, Exit, Fiber, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"
import type { CiJob, JobConclusion, RunConclusion, TestSummary } from "../../schemas/ci/Ci.ts"
import { type RepoRecord, Repositories } from "../git/Repositories.ts"
import { makeId } from "../platform/Ids.ts"
import { CommitStatuses } from "../protection/CommitStatuses.ts"
import { type CachePlan, cachePlan } from "./CachePlan.ts"
import { CiCaches } from "./CiCaches.ts"
import {
  abandonRunningJobs,
  appendLog,
  completeJob,
  completeRun,
  insertJobs,
  minutesUsed,
  type RunRow,
  selectRunById,
  skipRemainingJobs,
  startJob,
  toJob
} from "./CiRunRows.ts"
import { CiSettings } from "./CiSettings.ts"
import { detect, DETECTION_FILES, planJobs } from "./Detection.ts"
import { Executor, type Workspace } from "./Executor.ts"
import { LogMasker } from "./LogMasker.ts"
import { publishRunChange, reportStatus } from "./RunReports.ts"
import { summarize } from "./TestSummary.ts"

/** A job's stored log stops growing here (the rest is counted, not kept). */
const MAX_LOG_CHARS = 4 * 1024 * 1024
/** How often a running job's output is written, so the log endpoint shows it while it runs. */
const FLUSH_EVERY = Duration.millis(300)

interface JobResult {
  readonly conclusion: JobConclusion
  readonly exitCode: number | null
  readonly message: string | null
  readonly log: string
}

/**
 * Runs one claimed run to its end on this worker (GUIDE §14): exports the commit into a
 * fresh workspace, plans the jobs (install, lint, build, test), runs them one after another
 * in the sandbox with the spec's environment and the repository's variables, streams each
 * job's masked output into its log, stops at the first failure (later jobs `skipped`), and
 * completes the run with its test summary, `ci/test` status and events.
 * `cancelled` completes when the run's cancel is requested (from any runner).
 */
export class RunExecution extends Context.Service<RunExecution, {
  execute(row: RunRow, cancelled: Deferred.Deferred<void>): Effect.Effect<void>
  /** Ends a run a lost runner left `running`: its running job `error`, the rest skipped. */
  abandon(runId: string, message: string): Effect.Effect<void>
}>()("canopy/ci/RunExecution") {
  static readonly layer = Layer.effect(
    RunExecution,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const executor = yield* Executor
      const settings = yield* CiSettings
      const statuses = yield* CommitStatuses
      const repos = yield* Repositories
      const caches = yield* CiCaches

      const finish = Effect.fn("RunExecution.finish")(function*(
        repo: RepoRecord | undefined,
        runId: string,
        conclusion: RunConclusion,
        message: string | null,
        testSummary: TestSummary | null
      ) {
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* skipRemainingJobs(sql, runId)
          const completed = yield* completeRun(sql, runId, { conclusion, message, testSummary })
          if (completed !== undefined && repo !== undefined) {
            yield* publishRunChange(sql, repo, completed, { kind: "completed", testSummary })
            // In the same transaction: a completed run always has its final status.
            yield* reportStatus(statuses, repo, completed)
          }
        })).pipe(Effect.orDie)
      })

      const runJob = Effect.fn("RunExecution.runJob")(function*(
        repo: RepoRecord,
        row: RunRow,
        workspace: Workspace,
        job: { readonly id: string; readonly name: string; readonly command: string },
        env: Record<string, string>,
        secrets: ReadonlyArray<string>,
        timeoutSeconds: number,
        cancelled: Deferred.Deferred<void>,
        /** Run before the command, its line heading the log (the cache restore before `install`). */
        before: Effect.Effect<string>
      ) {
        const started = yield* startJob(sql, job.id).pipe(Effect.orDie)
        yield* publishRunChange(sql, repo, row, { kind: "changed", job: toJob(started) })
        const masker = new LogMasker(secrets)
        let pending = ""
        let full = ""
        let dropped = 0
        const add = (text: string) => {
          if (text === "") return
          const kept = text.slice(0, Math.max(0, MAX_LOG_CHARS - full.length))
          dropped += text.length - kept.length
          full += kept
          pending += kept
        }
        const flush = Effect.suspend(() => {
          const text = pending
          pending = ""
          return text === "" ? Effect.void : appendLog(sql, job.id, text).pipe(Effect.orDie, Effect.asVoid)
        })
        const flusher = yield* Effect.forkChild(Effect.forever(Effect.andThen(Effect.sleep(FLUSH_EVERY), flush)))
        add(masker.push(yield* before))
        const exec = executor.exec(workspace, {
          command: job.command,
          env,
          // Network is for package installs (GUIDE §14): lint, build and test run offline.
          network: job.name === "install",
          onOutput: (chunk) => add(masker.push(chunk))
        })
        const outcome = yield* Effect.raceFirst(
          exec.pipe(
            Effect.map((exit) => ({ _tag: "exited" as const, exit })),
            Effect.timeoutOption(Duration.seconds(timeoutSeconds)),
            Effect.map(Option.getOrElse(() => ({ _tag: "timeout" as const })))
          ),
          Deferred.await(cancelled).pipe(Effect.as({ _tag: "cancelled" as const }))
        ).pipe(
          Effect.catch((error) => Effect.succeed({ _tag: "broken" as const, message: error.message })),
          Effect.ensuring(Fiber.interrupt(flusher))
        )
        add(masker.end())
        if (dropped > 0) add(`\n[canopy] log truncated: ${dropped} more characters not kept\n`)
        yield* flush
        let result: JobResult
        switch (outcome._tag) {
          case "exited": {
            const code = outcome.exit.exitCode
            result = code === 0
              ? { conclusion: "success", exitCode: 0, message: null, log: full }
              : {
                conclusion: "failure",
                exitCode: code,
                message: code === null
                  ? `Killed by ${outcome.exit.signal ?? "a signal"}`
                  : `Exited with code ${code}`,
                log: full
              }
            break
          }
          case "timeout":
            result = {
              conclusion: "failure",
              exitCode: null,
              message: `Timed out after ${timeoutSeconds} seconds: the job's processes were killed`,
              log: full
            }
            break
          case "cancelled":
            result = { conclusion: "cancelled", exitCode: null, message: "Cancelled", log: full }
            break
          case "broken":
            result = { conclusion: "error", exitCode: null, message: outcome.message, log: full }
            break
        }
        const completed = yield* completeJob(sql, job.id, result).pipe(Effect.orDie)
        // Undefined: the job was already ended elsewhere (the run was swept as lost).
        if (completed !== undefined) {
          yield* publishRunChange(sql, repo, row, { kind: "job_completed", job: toJob(completed) })
        }
        return result
      })

      const execute = Effect.fn("RunExecution.execute")(function*(claimed: RunRow, cancelled: Deferred.Deferred<void>) {
        const repo = Option.getOrUndefined(yield* repos.findById(claimed.repo_id))
        if (repo === undefined) return yield* finish(undefined, claimed.id, "error", "The repository is gone", null)
        yield* publishRunChange(sql, repo, claimed, { kind: "started" })
        if (claimed.minutes_limit !== null) {
          const used = yield* minutesUsed(sql, claimed.org_id).pipe(Effect.orDie)
          if (used >= claimed.minutes_limit) {
            return yield* finish(
              repo,
              claimed.id,
              "error",
              `The organization used its ${claimed.minutes_limit} CI minutes of this month`,
              null
            )
          }
        }
        yield* Effect.scoped(Effect.gen(function*() {
          const workspace = yield* executor.checkout(repo, claimed.commit_sha).pipe(Effect.result)
          if (workspace._tag === "Failure") {
            return yield* finish(repo, claimed.id, "error", workspace.failure.message, null)
          }
          const root = Path.join(workspace.success.dir, "workspace")
          const files = new Set(yield* Effect.promise(() => FsP.readdir(root)))
          const config = yield* settings.config(repo)
          const planned = planJobs(config, files)
          if (planned === undefined) {
            return yield* finish(
              repo,
              claimed.id,
              "failure",
              `No project detected (looked for ${DETECTION_FILES}) and no install or test command configured`,
              null
            )
          }
          const jobs = planned.map((job) => ({ id: makeId("job"), ...job }))
          yield* insertJobs(sql, claimed.id, jobs).pipe(Effect.orDie)
          const variables = yield* settings.jobVariables(repo)
          const project = detect(config.projectType, files)
          const cache: CachePlan | undefined = config.cacheEnabled && project !== undefined
            ? yield* Effect.promise(() => cachePlan(project.projectType, root))
            : undefined
          const env: Record<string, string> = {
            ...variables.env,
            CI: "true",
            SERVICE_CI: "true",
            SERVICE_RUN_ID: claimed.id,
            SERVICE_REPO: `${repo.orgSlug}/${repo.slug}`,
            SERVICE_BRANCH: claimed.branch,
            SERVICE_COMMIT: claimed.commit_sha,
            ...(claimed.pr_number === null ? {} : { SERVICE_PR_NUMBER: String(claimed.pr_number) })
          }
          let conclusion: RunConclusion = "success"
          let message: string | null = null
          let testLog: string | undefined
          for (const job of jobs) {
            const current = (yield* selectRunById(sql, claimed.id).pipe(Effect.orDie)) ?? claimed
            const result = yield* runJob(
              repo,
              current,
              workspace.success,
              job,
              env,
              variables.secrets,
              config.timeout,
              cancelled,
              job.name === "install" && cache !== undefined
                ? caches.restore(repo.id, workspace.success, cache)
                : Effect.succeed("")
            )
            if (job.name === "install" && cache !== undefined && result.conclusion === "success") {
              const saved = yield* caches.save(repo.id, workspace.success, cache)
              if (saved !== "") yield* appendLog(sql, job.id, saved).pipe(Effect.orDie)
            }
            if (job.name === "test") testLog = result.log
            if (result.conclusion !== "success") {
              conclusion = result.conclusion === "cancelled"
                ? "cancelled"
                : result.conclusion === "error"
                ? "error"
                : "failure"
              message = `${job.name}: ${result.message ?? result.conclusion}`
              break
            }
          }
          const masker = new LogMasker(variables.secrets)
          const mask = (text: string) => masker.push(text) + masker.end()
          const summary = testLog === undefined ? null : yield* Effect.promise(() => summarize(root, testLog))
          const masked = summary === null ? null : {
            ...summary,
            failures: summary.failures.map((failure) => ({
              ...failure,
              name: mask(failure.name),
              message: mask(failure.message)
            }))
          }
          yield* finish(repo, claimed.id, conclusion, message, masked)
        }))
      }, (self, claimed) =>
        // Whatever happens (a defect, this runner stopping), the run does not stay `running` here.
        Effect.onExit(self, (exit) =>
          Exit.isSuccess(exit)
            ? Effect.void
            : Effect.gen(function*() {
              const repo = Option.getOrUndefined(yield* repos.findById(claimed.repo_id))
              yield* abandonWith(repo, claimed.id, Exit.hasInterrupts(exit) ? "Runner stopped" : "Internal error")
            }).pipe(Effect.ignore)))

      const abandonWith = Effect.fnUntraced(function*(repo: RepoRecord | undefined, runId: string, message: string) {
        yield* abandonRunningJobs(sql, runId, message).pipe(Effect.orDie)
        yield* finish(repo, runId, "error", message, null)
      })

      const abandon = Effect.fn("RunExecution.abandon")(function*(runId: string, message: string) {
        const row = yield* selectRunById(sql, runId).pipe(Effect.orDie)
        if (row === undefined) return
        const repo = Option.getOrUndefined(yield* repos.findById(row.repo_id))
        yield* abandonWith(repo, runId, message)
      })

      return RunExecution.of({ execute, abandon })
    })
  )
}

export type { CiJob }
