import { Clock, Context, Effect, Layer, Option, Ref } from "effect"
import { Prompt } from "effect/ai"
import { SqlClient } from "effect/sql"
import { AiReviewCompleted, AiReviewStarted } from "../../schemas/ai/AiReviewEvents.ts"
import { type ModelAnswer, ModelAnswer as ModelAnswerSchema } from "../../schemas/ai/AiReviews.ts"
import { RepoCache } from "../git/RepoCache.ts"
import type { OutboundGuard } from "../outbound/OutboundGuard.ts"
import { makeId } from "../platform/Ids.ts"
import { inTransaction } from "../platform/Rows.ts"
import { CommitStatuses } from "../protection/CommitStatuses.ts"
import { aiSuggestionsOfPull, insertComment, insertSuggestion } from "../pulls/Comments.ts"
import { diffAgainstMergeBase, parseDiff } from "../pulls/PullDiff.ts"
import { type PullContext, PullRequests } from "../pulls/PullRequests.ts"
import {
  type AiReviewRow,
  claimReview,
  completeReview,
  failReview,
  reviewById,
  supersedeOlder
} from "./AiReviewRows.ts"
import { AiSettings } from "./AiSettings.ts"
import { type Bot, BotUser } from "./BotUser.ts"
import { errorSentence } from "./ErrorSentence.ts"
import type { ProviderHttpClient } from "./providers/ProviderHttp.ts"
import { makeModel } from "./providers/Providers.ts"
import { publishReviewEvent } from "./ReviewEvents.ts"
import { commentBody, keepSuggestions, mergeAnswers, newSideText } from "./ReviewOutput.ts"
import { leftOutSentence, planPrompt, type PriorComment } from "./ReviewPrompt.ts"

/** The `ai/review` commit status context (GUIDE §15). */
export const AI_REVIEW_CONTEXT = "ai/review"

export interface Finished {
  readonly review: AiReviewRow
  readonly pull: PullContext
  readonly bot: Bot
}

/**
 * One review from `queued` to `completed` or `failed` (GUIDE §15): claims it (superseding
 * older unfinished ones), reports `ai/review` pending, sends the diff to the model in as
 * few calls as the budget allows, keeps the suggestions worth posting, and posts them as
 * the bot's inline comments with the review's completion and event in one transaction.
 * Answers the finished review, or none when there was nothing to run (claimed elsewhere,
 * superseded, gone).
 */
export class ReviewRun extends Context.Service<ReviewRun, {
  run(reviewId: string): Effect.Effect<Option.Option<Finished>>
}>()("canopy/ai/ReviewRun") {
  static readonly layer = Layer.effect(
    ReviewRun,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const pulls = yield* PullRequests
      const settingsService = yield* AiSettings
      const bots = yield* BotUser
      const cache = yield* RepoCache
      const statuses = yield* CommitStatuses
      const aiContext = yield* Effect.context<ProviderHttpClient | OutboundGuard>()
      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
      const reload = (id: string) => Effect.map(reviewById(sql, id).pipe(Effect.orDie), Option.getOrThrow)

      /** The diff's files and, for each suggestion's file, its lines at the head. */
      const readDiff = (pull: PullContext, headSha: string) =>
        cache.use(
          pull.repo,
          (synced) =>
            diffAgainstMergeBase({ dir: synced.dir, env: {} }, pull.row.base_sha, headSha).pipe(
              Effect.map(parseDiff)
            )
        ).pipe(Effect.orDie)

      const analyse = (review: AiReviewRow, pull: PullContext, usage: Ref.Ref<{ input: number; output: number }>) =>
        Effect.gen(function*() {
          const config = yield* settingsService.reviewConfig(pull.repo)
          const files = yield* readDiff(pull, review.head_sha)
          const earlier = yield* aiSuggestionsOfPull(sql, pull.row.id).pipe(
            Effect.orDie
          )
          const prior: Array<PriorComment> = earlier.map((s) => ({
            path: s.path,
            startLine: s.start_line,
            endLine: s.end_line,
            title: s.title
          }))
          const plan = planPrompt({
            title: pull.row.title,
            body: pull.row.body,
            files,
            focusAreas: config.settings.focus_areas,
            prior
          })
          const model = yield* makeModel(config.settings.model_provider, {
            baseUrl: config.settings.base_url,
            apiKey: config.apiKey,
            model: config.settings.model_name
          })
          const answers: Array<ModelAnswer> = []
          for (const call of plan.calls) {
            const response = yield* model.generateObject({
              prompt: Prompt.make([{ role: "system", content: plan.system }, { role: "user", content: call.user }]),
              schema: ModelAnswerSchema,
              objectName: "code_review"
            })
            yield* Ref.update(usage, (u) => ({
              input: u.input + (response.usage.inputTokens.total ?? 0),
              output: u.output + (response.usage.outputTokens.total ?? 0)
            }))
            answers.push(response.value)
          }
          const merged = answers.length === 0
            ? { summary: "Nothing to review in this diff.", overallSentiment: "positive" as const, suggestions: [] }
            : mergeAnswers(answers)
          const reviewed = plan.calls.flatMap((call) => call.files)
          const kept = keepSuggestions(merged.suggestions, reviewed, prior)
          // The lines each suggestion replaces, as the diff shows them at the head.
          const shown = new Map(reviewed.map((file) => [file.path, newSideText(file.patch)]))
          const originals = kept.map((s) => {
            const text = shown.get(s.path)
            return Array.from({ length: s.endLine - s.startLine + 1 }, (_, i) => text?.get(s.startLine + i) ?? "")
          })
          return { merged, kept, leftOut: plan.leftOut, originals }
        }).pipe(Effect.provide(aiContext))

      const reportStatus = (pull: PullContext, review: AiReviewRow, bot: Bot) => {
        const open = review.status === "completed" && review.overall_sentiment !== "needs_work"
        const state = review.status === "failed" ? "error" as const : open ? "success" as const : "failure" as const
        return statuses.create(pull.repo, review.head_sha, bot.id, {
          state,
          context: AI_REVIEW_CONTEXT,
          description: review.status === "failed"
            ? "The AI review failed"
            : state === "success"
            ? `AI review: ${review.overall_sentiment}, ${review.suggestions_count} suggestions`
            : "AI review: changes needed"
        })
      }

      const run = Effect.fn("ReviewRun.run")(function*(reviewId: string) {
        const found = yield* reviewById(sql, reviewId).pipe(Effect.orDie)
        if (Option.isNone(found) || found.value.status !== "queued") return Option.none<Finished>()
        const pull = yield* pulls.findById(found.value.pr_id)
        if (Option.isNone(pull)) return Option.none<Finished>()
        const context = pull.value
        yield* supersedeOlder(sql, context.row.id, reviewId, found.value.head_sha, yield* now).pipe(Effect.orDie)
        if (!(yield* claimReview(sql, reviewId, yield* now).pipe(Effect.orDie))) return Option.none<Finished>()
        const bot = yield* bots.ensure({ id: context.repo.orgId, slug: context.repo.orgSlug })
        const started = yield* reload(reviewId)
        yield* inTransaction(sql, publishReviewEvent(AiReviewStarted, context.repo, context.row, started, bot, {}))
        yield* statuses.create(context.repo, started.head_sha, bot.id, {
          state: "pending",
          context: AI_REVIEW_CONTEXT,
          description: "AI review running"
        })

        const usage = yield* Ref.make({ input: 0, output: 0 })
        const outcome = yield* Effect.result(analyse(started, context, usage))
        const used = yield* Ref.get(usage)
        const at = yield* now
        if (outcome._tag === "Failure") {
          const sentence = errorSentence(started.provider, outcome.failure)
          yield* Effect.logWarning(`AI review ${reviewId} failed: ${sentence}`)
          yield* inTransaction(
            sql,
            Effect.gen(function*() {
              if (
                !(yield* failReview(
                  sql,
                  reviewId,
                  sentence,
                  { inputTokens: used.input, outputTokens: used.output },
                  at
                ))
              ) {
                return
              }
              const failed = yield* reload(reviewId)
              yield* publishReviewEvent(AiReviewCompleted, context.repo, context.row, failed, bot, {})
            })
          )
        } else {
          const { kept, leftOut, merged, originals } = outcome.success
          const summary = [merged.summary.trim(), leftOutSentence(leftOut)].filter((s) => s !== "").join("\n\n")
          yield* inTransaction(
            sql,
            Effect.gen(function*() {
              for (const [i, s] of kept.entries()) {
                const commentId = makeId("cmt")
                yield* insertComment(sql, {
                  id: commentId,
                  prId: context.row.id,
                  authorId: bot.id,
                  body: commentBody(s),
                  path: s.path,
                  line: s.endLine,
                  startLine: s.startLine,
                  headSha: started.head_sha,
                  now: at
                })
                yield* insertSuggestion(sql, {
                  id: makeId("sug"),
                  prId: context.row.id,
                  commentId,
                  authorId: bot.id,
                  path: s.path,
                  startLine: s.startLine,
                  endLine: s.endLine,
                  originalLines: originals[i],
                  replacement: s.replacement,
                  headSha: started.head_sha,
                  now: at,
                  ai: { reviewId, severity: s.severity, category: s.category, title: s.title }
                })
              }
              const done = yield* completeReview(sql, reviewId, {
                summary,
                sentiment: merged.overallSentiment,
                suggestions: kept.length,
                security: kept.filter((s) => s.category === "security").length,
                performance: kept.filter((s) => s.category === "performance").length,
                inputTokens: used.input,
                outputTokens: used.output,
                skipped: leftOut.map((item) => item.path),
                now: at
              })
              // Superseded meanwhile: roll the comments back with it.
              if (!done) return yield* Effect.fail("superseded" as const)
              const completed = yield* reload(reviewId)
              yield* publishReviewEvent(AiReviewCompleted, context.repo, context.row, completed, bot, {})
            })
          ).pipe(Effect.catchIf((e): e is "superseded" => e === "superseded", () => Effect.void))
        }
        const finished = yield* reload(reviewId)
        if (finished.status === "running") return Option.none<Finished>()
        yield* reportStatus(context, finished, bot)
        return Option.some({ review: finished, pull: context, bot })
      })

      return ReviewRun.of({ run })
    })
  )
}
