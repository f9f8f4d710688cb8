import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { AiReview, AiSuggestion } from "../../schemas/ai/AiReviews.ts"
import { Conflict, NotFound } from "../../schemas/platform/Errors.ts"
import { refuseArchived } from "../git/Repositories.ts"
import { makeId } from "../platform/Ids.ts"
import { type AiSuggestionRow, suggestionsOfReview } from "../pulls/Comments.ts"
import { isOpen } from "../pulls/PullRequests.ts"
import { type PullContext, PullRequests } from "../pulls/PullRequests.ts"
import { type AiReviewRow, insertReview, latestReview, reviewById } from "./AiReviewRows.ts"
import { AiSettings } from "./AiSettings.ts"
import { ReviewRunner } from "./ReviewRunner.ts"

export const toAiSuggestion = (row: AiSuggestionRow): AiSuggestion => ({
  id: row.id,
  commentId: row.comment_id,
  path: row.path,
  startLine: row.start_line,
  endLine: row.end_line,
  severity: row.severity,
  category: row.category,
  title: row.title,
  body: row.body ?? "",
  replacement: row.replacement,
  headSha: row.head_sha,
  state: row.state,
  dismissReason: row.dismiss_reason,
  appliedSha: row.applied_sha
})

const iso = (date: Date | null) => date === null ? null : date.toISOString()

/**
 * AI reviews of pull requests (GUIDE §15): queue one (by hand, or from the pull request
 * events), read the latest with its suggestions. Running them is `ReviewRunner`'s.
 */
export class AiReviews extends Context.Service<AiReviews, {
  trigger(orgId: string, repoSlug: string, number: number): Effect.Effect<AiReview, NotFound | Conflict>
  /**
   * Queues an automatic review of `headSha` when the settings ask for one, in the caller's
   * transaction; answers the review's id. The caller wakes the runner after its commit, and
   * skips heads the bot pushed itself (its applied suggestions are not reviewed again).
   */
  enqueueAuto(pull: PullContext, headSha: string): Effect.Effect<Option.Option<string>>
  latest(orgId: string, repoSlug: string, number: number): Effect.Effect<AiReview, NotFound>
}>()("canopy/ai/AiReviews") {
  static readonly layer = Layer.effect(
    AiReviews,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const pulls = yield* PullRequests
      const settings = yield* AiSettings
      const runner = yield* ReviewRunner

      const render = (row: AiReviewRow) =>
        Effect.gen(function*() {
          const suggestions = yield* suggestionsOfReview(sql, row.id, true).pipe(Effect.orDie)
          return {
            id: row.id,
            status: row.status,
            headSha: row.head_sha,
            trigger: row.trigger,
            summary: row.summary,
            overallSentiment: row.overall_sentiment,
            suggestionsCount: row.suggestions_count,
            securityIssues: row.security_issues,
            performanceIssues: row.performance_issues,
            suggestions: suggestions.map(toAiSuggestion),
            skippedFiles: row.skipped_files,
            provider: row.provider,
            model: row.model,
            usage: { inputTokens: row.input_tokens, outputTokens: row.output_tokens },
            error: row.error,
            createdAt: row.created_at.toISOString(),
            startedAt: iso(row.started_at),
            completedAt: iso(row.completed_at)
          } satisfies AiReview
        })

      const queue = (pull: PullContext, headSha: string, trigger: "auto" | "manual") =>
        Effect.gen(function*() {
          const config = yield* settings.settings(pull.repo)
          const id = makeId("air")
          yield* insertReview(sql, {
            id,
            prId: pull.row.id,
            repoId: pull.repo.id,
            orgId: pull.repo.orgId,
            headSha,
            trigger,
            provider: config.model_provider,
            model: config.model_name
          }).pipe(Effect.orDie)
          return id
        })

      const trigger = Effect.fn("AiReviews.trigger")(function*(orgId: string, repoSlug: string, number: number) {
        const pull = yield* pulls.find(orgId, repoSlug, number)
        yield* refuseArchived(pull.repo)
        if (!isOpen(pull.row)) {
          return yield* new Conflict({ message: `Pull request #${pull.row.number} is ${pull.row.state}` })
        }
        const config = yield* settings.settings(pull.repo)
        if (!config.enabled) {
          return yield* new Conflict({ message: "AI review is not enabled for this repository" })
        }
        const id = yield* queue(pull, pull.row.head_sha, "manual")
        yield* runner.kick(pull.row.id, id)
        return yield* render(Option.getOrThrow(yield* reviewById(sql, id).pipe(Effect.orDie)))
      })

      const enqueueAuto = (pull: PullContext, headSha: string) =>
        Effect.gen(function*() {
          if (pull.repo.archived || !isOpen(pull.row)) return Option.none()
          const config = yield* settings.settings(pull.repo)
          if (!config.enabled || !config.auto_review_prs) return Option.none()
          if (pull.row.state === "draft" && !config.review_drafts) return Option.none()
          return Option.some(yield* queue(pull, headSha, "auto"))
        })

      const latest = Effect.fn("AiReviews.latest")(function*(orgId: string, repoSlug: string, number: number) {
        const pull = yield* pulls.find(orgId, repoSlug, number)
        const row = yield* latestReview(sql, pull.row.id).pipe(Effect.orDie)
        if (Option.isNone(row)) {
          return yield* new NotFound({ message: `Pull request #${number} has no AI review yet` })
        }
        return yield* render(row.value)
      })

      return AiReviews.of({ trigger, enqueueAuto, latest })
    })
  )
}
