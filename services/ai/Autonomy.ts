import { Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { AiReviewSuggestionApplied } from "../../schemas/ai/AiReviewEvents.ts"
import { MergeBlocked } from "../../schemas/pulls/PullRequests.ts"
import { makeId } from "../platform/Ids.ts"
import { CommitStatuses } from "../protection/CommitStatuses.ts"
import { ServerMergeStatusChecks } from "../pulls/BranchRules.ts"
import { type AiSuggestionRow, insertComment, suggestionsOfReview } from "../pulls/Comments.ts"
import { gatherReviews } from "../pulls/MergeChecks.ts"
import { PullRequestCommands } from "../pulls/PullRequestCommands.ts"
import { isOpen } from "../pulls/PullRequests.ts"
import { type PullContext, PullRequests } from "../pulls/PullRequests.ts"
import { replacementLines } from "../pulls/SuggestionCommit.ts"
import { Suggestions } from "../pulls/Suggestions.ts"
import type { Actor } from "../tenancy/Actor.ts"
import { type AiReviewRow, latestReview } from "./AiReviewRows.ts"
import { AiSettings } from "./AiSettings.ts"
import { type Bot, BotUser } from "./BotUser.ts"
import { publishReviewEvent } from "./ReviewEvents.ts"
import { MAX_REPLACEMENT_LINES } from "./ReviewOutput.ts"
import type { Finished } from "./ReviewRun.ts"

/** CI's commit status context (GUIDE §14), which the AI's merge waits for. */
export const CI_CONTEXT = "ci/test"

const botActor = (bot: Bot): Actor => ({ ...bot, role: "member" })

/** A suggestion the `apply` level applies by itself (GUIDE §15). */
export const isSafe = (s: AiSuggestionRow) =>
  s.state === "open" && s.replacement !== null && s.severity !== "critical" &&
  s.end_line - s.start_line + 1 <= MAX_REPLACEMENT_LINES &&
  replacementLines(s.replacement).length <= MAX_REPLACEMENT_LINES

type Verdict =
  | { readonly _tag: "Merge" }
  | { readonly _tag: "Wait"; readonly why: string }
  | { readonly _tag: "Stop"; readonly why: string }

/**
 * What the AI does beyond commenting (GUIDE §15): at `apply`, the safe suggestions of a
 * completed review, one commit each through the human suggestion path (author and
 * committer the bot); at `merge`, also the merge once the review is `positive` or
 * `neutral`, no critical suggestion is open, `ci/test` succeeded (when CI is enabled or reported) and, with
 * `requireHumanApproval`, a human approved. It comments whenever it applies, merges or stops.
 */
export class Autonomy extends Context.Service<Autonomy, {
  afterReview(finished: Finished): Effect.Effect<void>
  /** Re-tries the AI's merge after an approval or a status (silent while it must wait). */
  reconsider(prId: string): Effect.Effect<void>
}>()("canopy/ai/Autonomy") {
  static readonly layer = Layer.effect(
    Autonomy,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const settings = yield* AiSettings
      const pulls = yield* PullRequests
      const suggestions = yield* Suggestions
      const commands = yield* PullRequestCommands
      const statuses = yield* CommitStatuses
      const bots = yield* BotUser
      const withSql = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
        Effect.provideService(effect, SqlClient.SqlClient, sql)

      const comment = (pull: PullContext, bot: Bot, body: string) =>
        Effect.gen(function*() {
          const now = new Date(yield* Clock.currentTimeMillis)
          yield* insertComment(sql, {
            id: makeId("cmt"),
            prId: pull.row.id,
            authorId: bot.id,
            body,
            path: null,
            line: null,
            startLine: null,
            headSha: pull.row.head_sha,
            now
          }).pipe(Effect.orDie)
        })

      const reviewSuggestions = (reviewId: string) => suggestionsOfReview(sql, reviewId, false).pipe(Effect.orDie)

      const applySafe = (finished: Finished) =>
        Effect.gen(function*() {
          const { bot, review } = finished
          const applied: Array<string> = []
          const refused: Array<string> = []
          for (const s of (yield* reviewSuggestions(review.id)).filter(isSafe)) {
            const fresh = yield* pulls.findById(finished.pull.row.id)
            if (Option.isNone(fresh) || !isOpen(fresh.value.row)) break
            const result = yield* suggestions.apply(fresh.value, botActor(bot), s.id).pipe(Effect.result)
            if (result._tag === "Failure") {
              refused.push(`${s.path}:${s.start_line} (${result.failure.message})`)
              continue
            }
            applied.push(`${s.path}:${s.start_line} ${s.title}`)
            const after = Option.getOrThrow(yield* pulls.findById(finished.pull.row.id))
            yield* sql.withTransaction(
              publishReviewEvent(AiReviewSuggestionApplied, after.repo, after.row, review, bot, {
                suggestion: {
                  id: s.id,
                  path: s.path,
                  startLine: s.start_line,
                  endLine: s.end_line,
                  severity: s.severity,
                  category: s.category,
                  title: s.title,
                  commitSha: result.success.sha
                }
              })
            ).pipe(withSql, Effect.orDie)
          }
          const critical = (yield* reviewSuggestions(review.id)).filter((s) =>
            s.state === "open" && s.severity === "critical"
          )
          const lines = [
            applied.length === 0 ?
              "" :
              `Canopy AI applied ${applied.length} suggestion(s):\n${applied.map((a) => `- ${a}`).join("\n")}`,
            refused.length === 0 ? "" : `Could not apply: ${refused.join("; ")}.`,
            critical.length === 0
              ? ""
              : `${critical.length} critical suggestion(s) wait for a human: ${
                critical.map((s) => `${s.path}:${s.start_line} ${s.title}`).join("; ")
              }.`
          ].filter((line) => line !== "")
          if (lines.length > 0) yield* comment(finished.pull, bot, lines.join("\n\n"))
        })

      /** Whether the AI may merge now, must wait, or stops (GUIDE §15). */
      const verdict = (pull: PullContext, review: AiReviewRow, requireHuman: boolean, botId: string) =>
        Effect.gen(function*() {
          if (review.overall_sentiment === "needs_work") {
            return { _tag: "Stop", why: "the review found that this pull request needs work" } as Verdict
          }
          const open = yield* reviewSuggestions(review.id)
          const critical = open.filter((s) => s.state === "open" && s.severity === "critical")
          if (critical.length > 0) {
            return { _tag: "Stop", why: `${critical.length} critical suggestion(s) are open` } as Verdict
          }
          // The head may have moved only by the AI's own applied suggestions.
          const ownHeads = new Set(open.flatMap((s) => s.applied_sha === null ? [] : [s.applied_sha]))
          if (pull.row.head_sha !== review.head_sha && !ownHeads.has(pull.row.head_sha)) {
            return { _tag: "Wait", why: "new commits arrived after the review" } as Verdict
          }
          const ci = (yield* statuses.latest(pull.repo.id, pull.row.head_sha)).get(CI_CONTEXT)
          if (ci === "failure" || ci === "error") return { _tag: "Stop", why: `CI (${CI_CONTEXT}) failed` } as Verdict
          // With CI enabled on the repository (GUIDE §14) the merge waits for its success.
          const ciRequired = (yield* (yield* ServerMergeStatusChecks)(pull.repo)).includes(CI_CONTEXT)
          if (ci === "pending" || (ciRequired && ci !== "success")) {
            return { _tag: "Wait", why: `waiting for CI (${CI_CONTEXT})` } as Verdict
          }
          if (requireHuman) {
            const approvals = (yield* withSql(gatherReviews(pull.row.id))).filter((r) =>
              r.state === "approved" && r.reviewerId !== pull.row.author_id && r.reviewerId !== botId
            )
            if (approvals.length === 0) return { _tag: "Wait", why: "waiting for a human approval" } as Verdict
          }
          return { _tag: "Merge" } as Verdict
        })

      const tryMerge = (prId: string, announce: boolean) =>
        Effect.gen(function*() {
          const found = yield* pulls.findById(prId)
          if (Option.isNone(found) || !isOpen(found.value.row) || found.value.row.state === "draft") return
          const pull = found.value
          const config = yield* settings.settings(pull.repo)
          if (!config.enabled || config.autonomy_level !== "merge") return
          const review = yield* latestReview(sql, prId).pipe(Effect.orDie)
          if (Option.isNone(review) || review.value.status !== "completed") return
          const bot = yield* bots.ensure({ id: pull.repo.orgId, slug: pull.repo.orgSlug })
          const decided = yield* verdict(pull, review.value, config.require_human_approval, bot.id)
          if (decided._tag === "Stop") {
            if (announce) yield* comment(pull, bot, `Canopy AI will not merge this pull request: ${decided.why}.`)
            return
          }
          if (decided._tag === "Wait") {
            if (announce) {
              yield* comment(pull, bot, `Canopy AI will merge this pull request once ready: ${decided.why}.`)
            }
            return
          }
          const merged = yield* commands.merge({ id: pull.row.id, repoId: pull.repo.id }, {
            actor: botActor(bot),
            strategy: pull.row.auto_merge?.strategy ?? "merge",
            commitMessage: pull.row.auto_merge?.commitMessage ?? null,
            deleteBranch: pull.row.auto_merge?.deleteBranch ?? false
          }).pipe(Effect.result)
          if (merged._tag === "Success") {
            yield* comment(pull, bot, `Canopy AI merged this pull request (${merged.success.sha.slice(0, 7)}).`)
          } else {
            const failure = merged.failure
            // Blocked only by checks still pending: say nothing, the next event tries again.
            const pending = failure instanceof MergeBlocked && failure.checks.every((c) => c.status !== "failed")
            if (!pending || announce) {
              yield* comment(pull, bot, `Canopy AI could not merge this pull request: ${failure.message}.`)
            }
          }
        })

      const afterReview = (finished: Finished) =>
        Effect.gen(function*() {
          if (finished.review.status !== "completed") return
          const config = yield* settings.settings(finished.pull.repo)
          if (!config.enabled || config.autonomy_level === "suggest") return
          yield* applySafe(finished)
          if (config.autonomy_level === "merge") yield* tryMerge(finished.pull.row.id, true)
        }).pipe(Effect.catchCause((cause) => Effect.logWarning("AI autonomy failed", cause)))

      const reconsider = (prId: string) =>
        tryMerge(prId, false).pipe(Effect.catchCause((cause) => Effect.logWarning("AI merge failed", cause)))

      return Autonomy.of({ afterReview, reconsider })
    })
  )
}
