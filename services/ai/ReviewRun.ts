import { Clock, Context, Effect, Layer, Option, Ref } from "effect"
import { Prompt } from "effect/ai"
import { SqlClient } from "effect/sql"
import { AiReviewCompleted, AiReviewStarted } from "../../schemas/ai/AiReviewEvents.ts"
import { type ModelAnswer, ModelAnswer as ModelAnswerSchema } from "../../schemas/ai/AiReviews.ts"
import { RepoCache } from "../git/RepoCache.ts"
import type { OutboundGuard } from "../outbound/OutboundGuard.ts"
import { currentTraceparent } from "../platform/ClientSpans.ts"
import { makeId } from "../platform/Ids.ts"
import { inTransaction } from "../platform/Rows.ts"
import { CommitStatuses, statusReport } from "../protection/CommitStatuses.ts"
import { aiSuggestionsOfPull, insertCommentsStatement, insertSuggestionsStatement } from "../pulls/Comments.ts"
import { diffSinceMergeBase, parseDiff } from "../pulls/PullDiff.ts"
import { type PullContext, PullRequests } from "../pulls/PullRequests.ts"
import { type AiReviewRow, completeReview, failReview, reviewById, startReview } from "./AiReviewRows.ts"
import { AiSettings } from "./AiSettings.ts"
import { type Bot, BotUser } from "./BotUser.ts"
import { errorSentence } from "./ErrorSentence.ts"
import type { ProviderHttpClient } from "./providers/ProviderHttp.ts"
import { makeModel } from "./providers/Providers.ts"
import { publishReviewEvent, reviewEvent } from "./ReviewEvents.ts"
import { commentBody, keepSuggestions, mergeAnswers, originalLines } from "./ReviewOutput.ts"
import { makePhases, type Phases } from "./ReviewPhases.ts"
import { leftOutSentence, planPrompt, type PriorComment } from "./ReviewPrompt.ts"

/** The `ai/review` commit status context (GUIDE §15). */
export const AI_REVIEW_CONTEXT = "ai/review"

const PENDING = { state: "pending", context: AI_REVIEW_CONTEXT, description: "AI review running" } as const

/** The `ai/review` status of a finished review: `error` when it failed, `failure` when work is needed. */
const finalStatus = (review: AiReviewRow) => {
  const open = review.status === "completed" && review.overall_sentiment !== "needs_work"
  const state = review.status === "failed" ? "error" as const : open ? "success" as const : "failure" as const
  return {
    state,
    context: AI_REVIEW_CONTEXT,
    description: review.status === "failed"
      ? "The AI review failed"
      : state === "success"
      ? `AI review: ${review.overall_sentiment}, ${review.suggestions_count} suggestions`
      : "AI review: changes needed"
  }
}

export interface Finished {
  readonly review: AiReviewRow
  readonly pull: PullContext
  readonly bot: Bot
}

/**
 * One review from `queued` to `completed` or `failed` (GUIDE §15): claims it (superseding
 * older unfinished ones), reports `ai/review` pending, sends the diff to the model in as
 * few calls as the budget allows, keeps the suggestions worth posting, and posts them as
 * the bot's inline comments with the review's completion and event in one statement.
 * Answers the finished review, or none when there was nothing to run (claimed elsewhere,
 * superseded, gone).
 *
 * Its time around the model is counted in round trips (`npm run bench:ai`): the claim and
 * the `started` event are one statement, the `pending` status is reported while the diff is
 * read, the settings and earlier suggestions are read beside the diff (one git process),
 * and the posting is one statement whatever the number of suggestions.
 */
export class ReviewRun extends Context.Service<ReviewRun, {
  /** Runs the review `queued` (a row read once it was committed). */
  run(queued: AiReviewRow): Effect.Effect<Option.Option<Finished>>
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

      /** The diff's files. */
      const readDiff = (pull: PullContext, headSha: string) =>
        cache.use(
          pull.repo,
          (synced) =>
            diffSinceMergeBase({ dir: synced.dir, env: {} }, pull.row.base_sha, headSha).pipe(Effect.map(parseDiff))
        ).pipe(Effect.orDie)

      /** What a review reads before calling the model; git works in its own process meanwhile. */
      const gather = (pull: PullContext, headSha: string, phases: Phases) =>
        Effect.all({
          files: readDiff(pull, headSha).pipe(phases.time("diff")),
          config: settingsService.reviewConfig(pull.repo).pipe(phases.time("prompt")),
          earlier: aiSuggestionsOfPull(sql, pull.row.id).pipe(
            Effect.orDie,
            phases.time("prompt")
          )
        }, { concurrency: "unbounded" })

      const analyse = (
        pull: PullContext,
        { config, earlier, files }: Effect.Success<ReturnType<typeof gather>>,
        usage: Ref.Ref<{ input: number; output: number }>,
        phases: Phases
      ) =>
        Effect.gen(function*() {
          const prior: Array<PriorComment> = earlier.map((s) => ({
            path: s.path,
            startLine: s.start_line,
            endLine: s.end_line,
            title: s.title
          }))
          const plan = yield* phases.time("prompt")(Effect.sync(() =>
            planPrompt({
              title: pull.row.title,
              body: pull.row.body,
              files,
              focusAreas: config.settings.focus_areas,
              prior
            })
          ))
          const model = yield* makeModel(config.settings.model_provider, {
            baseUrl: config.settings.base_url,
            apiKey: config.apiKey,
            model: config.settings.model_name
          }).pipe(phases.time("model"))
          const answers: Array<ModelAnswer> = []
          for (const call of plan.calls) {
            const response = yield* model.generateObject({
              prompt: Prompt.make([{ role: "system", content: plan.system }, { role: "user", content: call.user }]),
              schema: ModelAnswerSchema,
              objectName: "code_review"
            }).pipe(phases.time("model"))
            yield* Ref.update(usage, (u) => ({
              input: u.input + (response.usage.inputTokens.total ?? 0),
              output: u.output + (response.usage.outputTokens.total ?? 0)
            }))
            answers.push(response.value)
          }
          return yield* phases.time("parse")(Effect.sync(() => {
            const merged = answers.length === 0
              ? { summary: "Nothing to review in this diff.", overallSentiment: "positive" as const, suggestions: [] }
              : mergeAnswers(answers)
            const reviewed = plan.calls.flatMap((call) => call.files)
            const kept = keepSuggestions(merged.suggestions, reviewed, prior)
            return { merged, kept, leftOut: plan.leftOut, originals: originalLines(kept, reviewed) }
          }))
        }).pipe(Effect.provide(aiContext))

      const reportStatus = (pull: PullContext, review: AiReviewRow, bot: Bot) =>
        statuses.create(pull.repo, review.head_sha, bot.id, finalStatus(review))

      /**
       * Claims the review with its `started` event and `pending` status (one statement); none
       * when another runner did or it was superseded.
       */
      const claim = (queued: AiReviewRow, context: PullContext, found: Option.Option<Bot>) =>
        Effect.gen(function*() {
          const bot = Option.isSome(found) && queued.org_id === context.repo.orgId
            ? found.value
            : yield* bots.ensure({ id: context.repo.orgId, slug: context.repo.orgSlug })
          const at = yield* now
          // The event carries the row as the claim leaves it.
          const running: AiReviewRow = { ...queued, status: "running", started_at: at }
          const pending = statusReport(sql, context.repo, running.head_sha, bot.id, PENDING)
          const started = yield* startReview(
            sql,
            queued.id,
            at,
            `Superseded by a newer review (of ${queued.head_sha.slice(0, 7)})`,
            {
              writes: () => [pending.statement],
              events: [
                reviewEvent(AiReviewStarted, context.repo, context.row, running, bot, {}, at.getTime()),
                pending.event
              ],
              traceparent: yield* currentTraceparent
            }
          ).pipe(Effect.orDie)
          return Option.map(started, (started) => ({ bot, started }))
        })

      const run = Effect.fn("ReviewRun.run")(function*(queued: AiReviewRow) {
        if (queued.status !== "queued") return Option.none<Finished>()
        const reviewId = queued.id
        const phases = yield* makePhases
        const [pull, found] = yield* Effect.all([pulls.findById(queued.pr_id), bots.find(queued.org_id)], {
          concurrency: "unbounded"
        }).pipe(phases.time("start"))
        if (Option.isNone(pull)) return Option.none<Finished>()
        const context = pull.value
        // The reads run beside the claim: a claim lost to another runner only wastes them.
        const [claimed, read] = yield* Effect.all([
          claim(queued, context, found).pipe(phases.time("start")),
          Effect.exit(gather(context, queued.head_sha, phases))
        ], { concurrency: "unbounded" })
        if (Option.isNone(claimed)) return Option.none<Finished>()
        const { bot, started } = claimed.value
        const inputs = yield* read

        const usage = yield* Ref.make({ input: 0, output: 0 })
        const outcome = yield* Effect.result(analyse(context, inputs, usage, phases))
        const used = yield* Ref.get(usage)
        const at = yield* now
        let finished: AiReviewRow
        if (outcome._tag === "Failure") {
          const sentence = errorSentence(started.provider, outcome.failure)
          yield* Effect.logWarning(`AI review ${reviewId} failed: ${sentence}`)
          yield* phases.time("post")(
            inTransaction(
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
          )
          finished = yield* reload(reviewId).pipe(phases.time("post"))
        } else {
          const { kept, leftOut, merged, originals } = outcome.success
          const summary = [merged.summary.trim(), leftOutSentence(leftOut)].filter((s) => s !== "").join("\n\n")
          const result = {
            summary,
            sentiment: merged.overallSentiment,
            suggestions: kept.length,
            security: kept.filter((s) => s.category === "security").length,
            performance: kept.filter((s) => s.category === "performance").length,
            inputTokens: used.input,
            outputTokens: used.output,
            skipped: leftOut.map((item) => item.path),
            now: at
          }
          const comments = kept.map((s) => ({
            id: makeId("cmt"),
            prId: context.row.id,
            authorId: bot.id,
            body: commentBody(s),
            path: s.path,
            line: s.endLine,
            startLine: s.startLine,
            headSha: started.head_sha,
            now: at
          }))
          const suggestions = kept.map((s, i) => ({
            id: makeId("sug"),
            prId: context.row.id,
            commentId: comments[i].id,
            authorId: bot.id,
            path: s.path,
            startLine: s.startLine,
            endLine: s.endLine,
            originalLines: originals[i],
            replacement: s.replacement,
            headSha: started.head_sha,
            now: at,
            ai: { reviewId, severity: s.severity, category: s.category, title: s.title }
          }))
          // The event carries the row as the completion leaves it.
          const completed: AiReviewRow = {
            ...started,
            status: "completed",
            summary,
            overall_sentiment: merged.overallSentiment,
            suggestions_count: result.suggestions,
            security_issues: result.security,
            performance_issues: result.performance,
            input_tokens: used.input,
            output_tokens: used.output,
            skipped_files: result.skipped,
            completed_at: at
          }
          const report = statusReport(sql, context.repo, completed.head_sha, bot.id, finalStatus(completed))
          const done = yield* completeReview(sql, reviewId, result, {
            writes: (when) => [
              insertCommentsStatement(sql, comments, when),
              insertSuggestionsStatement(sql, suggestions, when),
              report.statement
            ],
            events: [
              reviewEvent(AiReviewCompleted, context.repo, context.row, completed, bot, {}, at.getTime()),
              report.event
            ],
            traceparent: yield* currentTraceparent
          }).pipe(Effect.orDie, phases.time("post"))
          if (Option.isSome(done)) {
            yield* Effect.logInfo(phases.line(reviewId, done.value.status))
            return Option.some({ review: done.value, pull: context, bot })
          }
          // Superseded meanwhile: nothing was written; the row says how it ended.
          finished = yield* reload(reviewId).pipe(phases.time("post"))
        }
        if (finished.status === "running") return Option.none<Finished>()
        yield* reportStatus(context, finished, bot).pipe(phases.time("status"))
        yield* Effect.logInfo(phases.line(reviewId, finished.status))
        return Option.some({ review: finished, pull: context, bot })
      })

      return ReviewRun.of({ run })
    })
  )
}
