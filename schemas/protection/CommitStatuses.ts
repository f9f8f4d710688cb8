import { Schema } from "effect"
import { eventType } from "../events/Events.ts"

/** A commit status state (GUIDE §12): only `success` lets a required context pass. */
export const StatusState = Schema.Literals(["pending", "success", "failure", "error"])
export type StatusState = typeof StatusState.Type

/**
 * Published (in the outbox) when a commit status is reported; the pull requests whose head
 * is `sha` re-evaluate their merge checks and auto-merge.
 */
export const CommitStatusEvent = eventType(
  "commit_status",
  Schema.Struct({
    repoId: Schema.String,
    sha: Schema.String,
    context: Schema.String,
    state: StatusState
  })
)

/** A full 40-hex commit id (statuses name one commit, as on GitHub). */
export const CommitSha = Schema.String.check(
  Schema.isPattern(/^[0-9a-f]{40}$/, { message: "must be a full 40-character lowercase hex commit id" })
)

/** GUIDE §12: what a CI reports about one commit for one context. */
export const CreateCommitStatus = Schema.Struct({
  state: StatusState,
  context: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(255))),
  description: Schema.optionalKey(Schema.NullOr(Schema.String.check(Schema.isMaxLength(1000)))),
  targetUrl: Schema.optionalKey(Schema.NullOr(Schema.String.check(Schema.isMaxLength(2000))))
})
export type CreateCommitStatus = typeof CreateCommitStatus.Type

export const CommitStatus = Schema.Struct({
  id: Schema.String,
  sha: Schema.String,
  state: StatusState,
  context: Schema.String,
  description: Schema.NullOr(Schema.String),
  targetUrl: Schema.NullOr(Schema.String),
  creator: Schema.NullOr(Schema.String),
  createdAt: Schema.String
})
export type CommitStatus = typeof CommitStatus.Type

/** Every status reported for the commit, newest first; `state` combines the latest per context. */
export const CommitStatusList = Schema.Struct({
  sha: Schema.String,
  state: StatusState,
  statuses: Schema.Array(CommitStatus),
  count: Schema.Int
})
export type CommitStatusList = typeof CommitStatusList.Type
