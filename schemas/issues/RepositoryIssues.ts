import { Schema } from "effect"
import { eventType } from "../events/Events.ts"

/**
 * Repository issues (GUIDE §11): a minimal tracker numbered from the sequence pull
 * requests share, so `#n` is unambiguous.
 *
 * Wire choices where the spec is silent (docs/decisions.md): `closedBy` is the pull
 * request whose merge closed the issue (`{id, number}`), `null` when it is open or was
 * closed by hand; `closedAt` is set by any close. Labels are free strings (trimmed,
 * de-duplicated, order kept).
 */

export const IssueState = Schema.Literals(["open", "closed"])
export type IssueState = typeof IssueState.Type

export const IssuePerson = Schema.Struct({ id: Schema.String, name: Schema.String })
export type IssuePerson = typeof IssuePerson.Type

export const ClosedBy = Schema.Struct({ id: Schema.String, number: Schema.Int })

export const RepositoryIssue = Schema.Struct({
  id: Schema.String,
  number: Schema.Int,
  title: Schema.String,
  body: Schema.String,
  state: IssueState,
  labels: Schema.Array(Schema.String),
  author: IssuePerson,
  createdAt: Schema.String,
  updatedAt: Schema.String,
  closedAt: Schema.NullOr(Schema.String),
  closedBy: Schema.NullOr(ClosedBy)
}).annotate({
  examples: [{
    id: "iss_3kT9xQ2mP8vL1nR5wY7z",
    number: 12,
    title: "Crash when the config file is empty",
    body: "Steps to reproduce: …",
    state: "closed",
    labels: ["bug"],
    author: { id: "user_8fK2", name: "Alice" },
    createdAt: "2026-01-02T10:00:00.000Z",
    updatedAt: "2026-01-03T09:30:00.000Z",
    closedAt: "2026-01-03T09:30:00.000Z",
    closedBy: { id: "pr_Q1w2E3r4T5y6U7i8O9p0", number: 14 }
  }]
})
export type RepositoryIssue = typeof RepositoryIssue.Type

/** A page of issues; `count` is the total matching the `state` filter (GUIDE §4). */
export const RepositoryIssueList = Schema.Struct({ issues: Schema.Array(RepositoryIssue), count: Schema.Int })
export type RepositoryIssueList = typeof RepositoryIssueList.Type

const Title = Schema.String.check(
  Schema.makeFilter((title: string) => title.trim().length > 0 || "must not be empty"),
  Schema.isMaxLength(256)
)
const Body = Schema.String.check(Schema.isMaxLength(65_536))
const Label = Schema.String.check(
  Schema.makeFilter((label: string) => label.trim().length > 0 || "must not be empty"),
  Schema.isMaxLength(50)
)
const Labels = Schema.Array(Label).check(Schema.isMaxLength(100))

export const CreateRepositoryIssue = Schema.Struct({
  title: Title,
  body: Schema.optionalKey(Body),
  labels: Schema.optionalKey(Labels)
}).annotate({ examples: [{ title: "Crash when the config file is empty", body: "…", labels: ["bug"] }] })
export type CreateRepositoryIssue = typeof CreateRepositoryIssue.Type

export const UpdateRepositoryIssue = Schema.Struct({
  title: Schema.optionalKey(Title),
  body: Schema.optionalKey(Body),
  state: Schema.optionalKey(IssueState),
  labels: Schema.optionalKey(Labels)
}).annotate({ examples: [{ state: "closed" }, { labels: ["bug", "p1"] }] })
export type UpdateRepositoryIssue = typeof UpdateRepositoryIssue.Type

export const ListRepositoryIssuesQuery = {
  /** `open` (default, as on GitHub), `closed` or `all`. */
  state: Schema.optional(Schema.Literals(["open", "closed", "all"])),
  limit: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 }))),
  /** 1-based page of `limit` issues. */
  page: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100_000 })))
}

export const IssueComment = Schema.Struct({
  id: Schema.String,
  body: Schema.String,
  author: IssuePerson,
  createdAt: Schema.String,
  updatedAt: Schema.String
})
export type IssueComment = typeof IssueComment.Type

export const IssueCommentList = Schema.Struct({ comments: Schema.Array(IssueComment), count: Schema.Int })
export type IssueCommentList = typeof IssueCommentList.Type

export const CreateIssueComment = Schema.Struct({
  body: Schema.String.check(
    Schema.makeFilter((body: string) => body.trim().length > 0 || "must not be empty"),
    Schema.isMaxLength(65_536)
  )
}).annotate({ examples: [{ body: "Reproduced on main." }] })
export type CreateIssueComment = typeof CreateIssueComment.Type

const EventRepository = Schema.Struct({ id: Schema.String, name: Schema.String, fullName: Schema.String })

/** What every `issue.*` event carries; webhooks deliver it with `event` and `action` in front. */
const issueEventFields = {
  repository: EventRepository,
  issue: RepositoryIssue,
  /** Who acted; `null` for the server. */
  sender: Schema.NullOr(IssuePerson),
  timestamp: Schema.String
}

export const IssueOpenedEvent = eventType("issue.opened", Schema.Struct(issueEventFields))
export const IssueClosedEvent = eventType("issue.closed", Schema.Struct(issueEventFields))
/** `changes`: the previous value of each changed field (GitHub's `edited`); a reopen changes `state`. */
export const IssueUpdatedEvent = eventType(
  "issue.updated",
  Schema.Struct({
    ...issueEventFields,
    changes: Schema.Record(Schema.String, Schema.Struct({ from: Schema.Unknown }))
  })
)
export const IssueCommentedEvent = eventType(
  "issue.commented",
  Schema.Struct({ ...issueEventFields, comment: IssueComment })
)

/** Every repository issue event, in the order webhooks list them. */
export const issueEventTypes = [IssueOpenedEvent, IssueClosedEvent, IssueUpdatedEvent, IssueCommentedEvent]
