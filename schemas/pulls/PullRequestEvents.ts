import { Schema } from "effect"
import { eventType } from "../events/Events.ts"

/**
 * The `pull_request.*` domain events (spec 001 "Events"), published in the transaction of
 * the change and delivered by repository webhooks as
 * `{event, action, repository, pullRequest, sender, timestamp}` plus the event's own object.
 */

export const EventPullRequest = Schema.Struct({
  id: Schema.String,
  number: Schema.Int,
  title: Schema.String,
  body: Schema.String,
  state: Schema.String,
  sourceBranch: Schema.String,
  targetBranch: Schema.String,
  headSha: Schema.String,
  author: Schema.Struct({ id: Schema.String, name: Schema.String })
})
export type EventPullRequest = typeof EventPullRequest.Type

const EventRepository = Schema.Struct({ id: Schema.String, name: Schema.String, fullName: Schema.String })
const EventSender = Schema.NullOr(Schema.Struct({ id: Schema.String, name: Schema.String }))

const base = {
  repository: EventRepository,
  pullRequest: EventPullRequest,
  sender: EventSender,
  timestamp: Schema.String
}

export const PullRequestOpened = eventType("pull_request.opened", Schema.Struct(base))
export const PullRequestClosed = eventType(
  "pull_request.closed",
  Schema.Struct({ ...base, merged: Schema.Boolean })
)
export const PullRequestMerged = eventType(
  "pull_request.merged",
  Schema.Struct({ ...base, merge: Schema.Struct({ sha: Schema.String, strategy: Schema.String }) })
)
/** New commits (`before`/`after`), or a change of title, body or draft state (`changes`). */
export const PullRequestUpdated = eventType(
  "pull_request.updated",
  Schema.Struct({
    ...base,
    before: Schema.NullOr(Schema.String),
    after: Schema.NullOr(Schema.String),
    changes: Schema.Array(Schema.String)
  })
)
export const PullRequestReviewRequested = eventType(
  "pull_request.review_requested",
  Schema.Struct({ ...base, requestedReviewers: Schema.Array(Schema.String) })
)
export const PullRequestReviewSubmitted = eventType(
  "pull_request.review_submitted",
  Schema.Struct({
    ...base,
    review: Schema.Struct({ id: Schema.String, state: Schema.String, body: Schema.String, reviewer: Schema.String })
  })
)

/** Every pull request event type, for consumers (webhooks). */
export const pullRequestEventTypes = [
  PullRequestOpened,
  PullRequestClosed,
  PullRequestMerged,
  PullRequestUpdated,
  PullRequestReviewRequested,
  PullRequestReviewSubmitted
] as const
