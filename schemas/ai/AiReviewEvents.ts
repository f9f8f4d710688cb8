import { Schema } from "effect"
import { eventType } from "../events/Events.ts"
import { EventPullRequest } from "../pulls/PullRequestEvents.ts"

/**
 * The `ai_review.*` domain events (spec 001 "Events", GUIDE §13 payloads): webhooks deliver
 * `{event, action, repository, pullRequest, aiReview, suggestion?, sender, timestamp}`.
 * Nothing here ever carries the provider key.
 */

const EventRepository = Schema.Struct({ id: Schema.String, name: Schema.String, fullName: Schema.String })

export const EventAiReview = Schema.Struct({
  id: Schema.String,
  status: Schema.String,
  headSha: Schema.String,
  summary: Schema.NullOr(Schema.String),
  overallSentiment: Schema.NullOr(Schema.String),
  suggestionsCount: Schema.Int,
  securityIssues: Schema.Int,
  performanceIssues: Schema.Int,
  provider: Schema.String,
  model: Schema.String,
  error: Schema.NullOr(Schema.String)
})
export type EventAiReview = typeof EventAiReview.Type

const base = {
  repository: EventRepository,
  pullRequest: EventPullRequest,
  aiReview: EventAiReview,
  sender: Schema.NullOr(Schema.Struct({ id: Schema.String, name: Schema.String })),
  timestamp: Schema.String
}

export const AiReviewStarted = eventType("ai_review.started", Schema.Struct(base))
export const AiReviewCompleted = eventType("ai_review.completed", Schema.Struct(base))
export const AiReviewSuggestionApplied = eventType(
  "ai_review.suggestion_applied",
  Schema.Struct({
    ...base,
    suggestion: Schema.Struct({
      id: Schema.String,
      path: Schema.String,
      startLine: Schema.Int,
      endLine: Schema.Int,
      severity: Schema.String,
      category: Schema.String,
      title: Schema.String,
      commitSha: Schema.String
    })
  })
)

export const aiReviewEventTypes = [AiReviewStarted, AiReviewCompleted, AiReviewSuggestionApplied] as const
