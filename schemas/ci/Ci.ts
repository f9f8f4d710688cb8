import { Schema } from "effect"
import { eventType } from "../events/Events.ts"

/** CI (spec 001 "CI configuration", "CI run"; GUIDE §14). */

export const ProjectType = Schema.Literals(["auto", "nodejs", "go", "python", "rust"])
export type ProjectType = typeof ProjectType.Type

/** The timeout's bounds in seconds; the plan's ceiling (`Plans.ts`) may be lower. */
export const TIMEOUT_MIN = 10
export const TIMEOUT_MAX = 900

export const CiConfig = Schema.Struct({
  enabled: Schema.Boolean,
  projectType: ProjectType,
  /** null: auto-detected from the commit's files. */
  installCommand: Schema.NullOr(Schema.String),
  testCommand: Schema.NullOr(Schema.String),
  lintCommand: Schema.NullOr(Schema.String),
  buildCommand: Schema.NullOr(Schema.String),
  timeout: Schema.Int,
  cacheEnabled: Schema.Boolean,
  triggerOnPush: Schema.Boolean,
  triggerOnPR: Schema.Boolean
})
export type CiConfig = typeof CiConfig.Type

const Command = Schema.NullOr(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(4000)))

export const UpdateCiConfig = Schema.Struct({
  enabled: Schema.optional(Schema.Boolean),
  projectType: Schema.optional(ProjectType),
  installCommand: Schema.optional(Command),
  testCommand: Schema.optional(Command),
  lintCommand: Schema.optional(Command),
  buildCommand: Schema.optional(Command),
  timeout: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: TIMEOUT_MIN, maximum: TIMEOUT_MAX }))),
  cacheEnabled: Schema.optional(Schema.Boolean),
  triggerOnPush: Schema.optional(Schema.Boolean),
  triggerOnPR: Schema.optional(Schema.Boolean)
})
export type UpdateCiConfig = typeof UpdateCiConfig.Type

/** Variable names: upper case, not the ones the runner sets (`CI`, `SERVICE_*`). */
export const VariableName = Schema.String.check(
  Schema.isPattern(/^[A-Z_][A-Z0-9_]{0,99}$/),
  Schema.makeFilter((name: string) =>
    name !== "CI" && !name.startsWith("SERVICE_") && name !== "PATH" && name !== "HOME"
      ? undefined
      : "CI, SERVICE_*, PATH and HOME are set by the runner"
  )
)

export const CiVariable = Schema.Struct({
  name: Schema.String,
  secret: Schema.Boolean,
  /** The value of a non-secret variable; null for secrets (never returned). */
  value: Schema.NullOr(Schema.String),
  hasValue: Schema.Boolean,
  updatedAt: Schema.String
})
export type CiVariable = typeof CiVariable.Type
export const CiVariableList = Schema.Struct({ variables: Schema.Array(CiVariable), count: Schema.Int })
export type CiVariableList = typeof CiVariableList.Type

export const PutCiVariable = Schema.Struct({
  value: Schema.String.check(Schema.isMaxLength(32_768)),
  secret: Schema.optional(Schema.Boolean)
})
export type PutCiVariable = typeof PutCiVariable.Type

export const RunStatus = Schema.Literals(["queued", "running", "completed"])
export type RunStatus = typeof RunStatus.Type
export const RunConclusion = Schema.Literals(["success", "failure", "error", "cancelled"])
export type RunConclusion = typeof RunConclusion.Type
export const RunEvent = Schema.Literals(["push", "pull_request", "manual"])
export type RunEvent = typeof RunEvent.Type

export const CiRun = Schema.Struct({
  id: Schema.String,
  number: Schema.Int,
  status: RunStatus,
  conclusion: Schema.NullOr(RunConclusion),
  event: RunEvent,
  branch: Schema.String,
  commitSha: Schema.String,
  prNumber: Schema.NullOr(Schema.Int),
  rerunOf: Schema.NullOr(Schema.Int),
  message: Schema.NullOr(Schema.String),
  /** Whole seconds from start to completion (so far, while running); null before it starts. */
  duration: Schema.NullOr(Schema.Int),
  createdAt: Schema.String,
  startedAt: Schema.NullOr(Schema.String),
  completedAt: Schema.NullOr(Schema.String)
})
export type CiRun = typeof CiRun.Type

export const JobStatus = Schema.Literals(["queued", "running", "completed"])
export const JobConclusion = Schema.Literals(["success", "failure", "error", "cancelled", "skipped"])
export type JobConclusion = typeof JobConclusion.Type

export const CiJob = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  command: Schema.String,
  status: JobStatus,
  conclusion: Schema.NullOr(JobConclusion),
  exitCode: Schema.NullOr(Schema.Int),
  message: Schema.NullOr(Schema.String),
  startedAt: Schema.NullOr(Schema.String),
  completedAt: Schema.NullOr(Schema.String),
  duration: Schema.NullOr(Schema.Int)
})
export type CiJob = typeof CiJob.Type

export const TestFailure = Schema.Struct({
  name: Schema.String,
  message: Schema.String,
  file: Schema.optional(Schema.String)
})
export type TestFailure = typeof TestFailure.Type

export const TestSummary = Schema.Struct({
  total: Schema.Int,
  passed: Schema.Int,
  failed: Schema.Int,
  skipped: Schema.Int,
  /** Line coverage in percent, or null when no report was found. */
  coverage: Schema.NullOr(Schema.Number),
  failures: Schema.Array(TestFailure)
})
export type TestSummary = typeof TestSummary.Type

export const CiRunDetail = Schema.Struct({
  run: CiRun,
  jobs: Schema.Array(CiJob),
  testSummary: Schema.NullOr(TestSummary)
})
export type CiRunDetail = typeof CiRunDetail.Type

export const CiRunList = Schema.Struct({ runs: Schema.Array(CiRun), count: Schema.Int })
export type CiRunList = typeof CiRunList.Type

export const CiRunsQuery = {
  status: Schema.optional(RunStatus),
  limit: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 })))
}

export const TriggerRun = Schema.Struct({
  branch: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(250)),
  commitSha: Schema.optional(Schema.String.check(Schema.isPattern(/^[0-9a-f]{40}$/)))
})
export type TriggerRun = typeof TriggerRun.Type

const EventRepository = Schema.Struct({ id: Schema.String, name: Schema.String, fullName: Schema.String })
const EventSender = Schema.NullOr(Schema.Struct({ id: Schema.String, name: Schema.String }))

const runEventData = {
  repository: EventRepository,
  sender: EventSender,
  run: CiRun,
  timestamp: Schema.String
}

/** Webhook events (GUIDE §14): the data is the payload after `event` and `action`. */
export const CiRunStarted = eventType("ci.run_started", Schema.Struct(runEventData))
export const CiRunCompleted = eventType(
  "ci.run_completed",
  Schema.Struct({ ...runEventData, testSummary: Schema.NullOr(TestSummary) })
)
export const CiJobCompleted = eventType("ci.job_completed", Schema.Struct({ ...runEventData, job: CiJob }))
export const ciWebhookEventTypes = [CiRunStarted, CiRunCompleted, CiJobCompleted] as const

/** Every change of a run or of one of its jobs, for the organization's authenticated live stream. */
export const CiRunChanged = eventType(
  "ci.run",
  Schema.Struct({ repository: EventRepository, run: CiRun, job: Schema.optional(CiJob) })
)
