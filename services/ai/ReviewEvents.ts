import { Clock, Effect } from "effect"
import { type EventAiReview } from "../../schemas/ai/AiReviewEvents.ts"
import type { EventType } from "../../schemas/events/Events.ts"
import { publish } from "../events/Events.ts"
import type { RepoRecord } from "../git/Repositories.ts"
import { eventRepository, type PrRow, toEventPullRequest } from "../pulls/PullRequests.ts"
import type { AiReviewRow } from "./AiReviewRows.ts"

export const eventReview = (row: AiReviewRow): EventAiReview => ({
  id: row.id,
  status: row.status,
  headSha: row.head_sha,
  summary: row.summary,
  overallSentiment: row.overall_sentiment,
  suggestionsCount: row.suggestions_count,
  securityIssues: row.security_issues,
  performanceIssues: row.performance_issues,
  provider: row.provider,
  model: row.model,
  error: row.error
})

/** An `ai_review.*` event with the common fields plus `extra`, as of `now`. */
export const reviewEvent = <A>(
  type: EventType<A>,
  repo: RepoRecord,
  pr: PrRow,
  review: AiReviewRow,
  sender: { readonly id: string; readonly name: string } | null,
  extra: Omit<A, "repository" | "pullRequest" | "aiReview" | "sender" | "timestamp">,
  now: number
) => {
  const data = {
    repository: eventRepository(repo),
    pullRequest: toEventPullRequest(pr),
    aiReview: eventReview(review),
    sender: sender === null ? null : { id: sender.id, name: sender.name },
    timestamp: new Date(now).toISOString(),
    ...extra
  } as A
  return type.make(repo.orgId, data)
}

/** Publishes an `ai_review.*` event with the common fields plus `extra`, in the caller's transaction. */
export const publishReviewEvent = <A>(
  type: EventType<A>,
  repo: RepoRecord,
  pr: PrRow,
  review: AiReviewRow,
  sender: { readonly id: string; readonly name: string } | null,
  extra: Omit<A, "repository" | "pullRequest" | "aiReview" | "sender" | "timestamp">
) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    yield* publish(reviewEvent(type, repo, pr, review, sender, extra, now))
  })
