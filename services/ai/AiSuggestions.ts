import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { AiReviewSuggestionApplied } from "../../schemas/ai/AiReviewEvents.ts"
import type { AiSuggestion } from "../../schemas/ai/AiReviews.ts"
import { Conflict, NotFound } from "../../schemas/platform/Errors.ts"
import { refuseArchived } from "../git/Repositories.ts"
import { inTransaction } from "../platform/Rows.ts"
import { aiSuggestionById, dismissSuggestion } from "../pulls/Comments.ts"
import { type PullContext, PullRequests } from "../pulls/PullRequests.ts"
import { Suggestions } from "../pulls/Suggestions.ts"
import type { Actor } from "../tenancy/Actor.ts"
import { reviewById } from "./AiReviewRows.ts"
import { toAiSuggestion } from "./AiReviews.ts"
import { publishReviewEvent } from "./ReviewEvents.ts"

/**
 * Applying and dismissing AI suggestions by hand (spec 001 "AI review", GUIDE §15): apply
 * goes through the human suggestion path (author the bot, committer the applier, 409 when
 * outdated or not open); dismiss keeps the reason.
 */
export class AiSuggestions extends Context.Service<AiSuggestions, {
  apply(orgId: string, repoSlug: string, id: string, actor: Actor): Effect.Effect<
    { readonly suggestion: AiSuggestion; readonly commitSha: string },
    NotFound | Conflict
  >
  dismiss(orgId: string, repoSlug: string, id: string, reason: string | null): Effect.Effect<
    AiSuggestion,
    NotFound | Conflict
  >
}>()("canopy/ai/AiSuggestions") {
  static readonly layer = Layer.effect(
    AiSuggestions,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const pulls = yield* PullRequests
      const suggestions = yield* Suggestions

      const one = (id: string) =>
        aiSuggestionById(sql, id).pipe(
          Effect.orDie,
          Effect.map((rows) => Option.fromNullishOr(rows[0]))
        )

      /** The suggestion and its pull request, when both belong to the organization's repository. */
      const locate = (orgId: string, repoSlug: string, id: string) =>
        Effect.gen(function*() {
          const notFound = new NotFound({ message: `Suggestion '${id}' not found` })
          const row = yield* one(id)
          if (Option.isNone(row)) return yield* notFound
          const pull: Option.Option<PullContext> = yield* pulls.findById(row.value.pr_id)
          if (Option.isNone(pull) || pull.value.repo.orgId !== orgId || pull.value.repo.slug !== repoSlug) {
            return yield* notFound
          }
          return { row: row.value, pull: pull.value }
        })

      const apply = Effect.fn("AiSuggestions.apply")(
        function*(orgId: string, repoSlug: string, id: string, actor: Actor) {
          const { pull } = yield* locate(orgId, repoSlug, id)
          yield* refuseArchived(pull.repo)
          const result = yield* suggestions.apply(pull, actor, id)
          const after = Option.getOrThrow(yield* one(id))
          if (after.review_id !== null) {
            const review = yield* reviewById(sql, after.review_id).pipe(Effect.orDie)
            const fresh = yield* pulls.findById(pull.row.id)
            if (Option.isSome(review) && Option.isSome(fresh)) {
              yield* inTransaction(
                sql,
                publishReviewEvent(AiReviewSuggestionApplied, fresh.value.repo, fresh.value.row, review.value, actor, {
                  suggestion: {
                    id,
                    path: after.path,
                    startLine: after.start_line,
                    endLine: after.end_line,
                    severity: after.severity,
                    category: after.category,
                    title: after.title,
                    commitSha: result.sha
                  }
                })
              )
            }
          }
          return { suggestion: toAiSuggestion(after), commitSha: result.sha }
        }
      )

      const dismiss = Effect.fn("AiSuggestions.dismiss")(
        function*(orgId: string, repoSlug: string, id: string, reason: string | null) {
          const { row } = yield* locate(orgId, repoSlug, id)
          const done = yield* dismissSuggestion(sql, id, reason).pipe(Effect.orDie)
          if (done.length === 0) return yield* new Conflict({ message: `The suggestion is ${row.state}` })
          return toAiSuggestion(Option.getOrThrow(yield* one(id)))
        }
      )

      return AiSuggestions.of({ apply, dismiss })
    })
  )
}
