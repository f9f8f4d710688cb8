import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { Conflict, NotFound } from "../../schemas/platform/Errors.ts"
import type { Actor } from "../tenancy/Actor.ts"
import { userIdentity } from "../tenancy/Tenancy.ts"
import { markSuggestionApplied } from "./CommentRows.ts"
import { Comments } from "./Comments.ts"
import { isOpen } from "./PullRequestRows.ts"
import type { PullContext } from "./PullRequests.ts"
import { SuggestionCommits } from "./SuggestionCommit.ts"

/**
 * Applying a suggestion (GUIDE §11): a commit on the source branch by the suggester,
 * committed by the applier, refused with 409 when outdated, not open, or a no-op.
 */
export class Suggestions extends Context.Service<Suggestions, {
  apply(pull: PullContext, actor: Actor, id: string): Effect.Effect<
    { readonly applied: boolean; readonly sha: string },
    NotFound | Conflict
  >
}>()("canopy/pulls/Suggestions") {
  static readonly layer = Layer.effect(
    Suggestions,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const comments = yield* Comments
      const commits = yield* SuggestionCommits

      const apply = Effect.fn("Suggestions.apply")(function*(pull: PullContext, actor: Actor, id: string) {
        const found = yield* comments.suggestion(pull, id)
        if (Option.isNone(found)) return yield* new NotFound({ message: `Suggestion '${id}' not found` })
        const suggestion = found.value
        if (!isOpen(pull.row)) {
          return yield* new Conflict({ message: `Pull request #${pull.row.number} is ${pull.row.state}` })
        }
        if (suggestion.state !== "open") {
          return yield* new Conflict({
            message: suggestion.state === "applied"
              ? "The suggestion is already applied"
              : "The suggestion was dismissed"
          })
        }
        if (suggestion.replacement === null) {
          return yield* new Conflict({ message: "The suggestion has no replacement text to apply" })
        }
        // The suggester is the commit's author.
        const author = Option.getOrUndefined(yield* userIdentity(sql, suggestion.author_id).pipe(Effect.orDie))
        const result = yield* commits.applySuggestion({
          repo: pull.repo,
          branch: pull.row.source_branch,
          expectedHeadSha: pull.row.head_sha,
          path: suggestion.path,
          startLine: suggestion.start_line,
          endLine: suggestion.end_line,
          originalLines: suggestion.original_lines,
          replacement: suggestion.replacement,
          author: { name: author?.name ?? author?.username ?? "unknown", email: author?.email ?? "" },
          committer: { name: actor.name, email: actor.email, id: actor.id },
          message: `Apply suggestion to ${suggestion.path}\n\nSuggested in #${pull.row.number}.`,
          // Marked applied (and by whom) in the transaction that moves the branch.
          alongside: (sha) => markSuggestionApplied(sql, id, sha, actor.id).pipe(Effect.asVoid, Effect.orDie)
        }).pipe(
          Effect.mapError((refused) =>
            new Conflict({
              message: refused.reason === "outdated"
                ? "The suggestion is outdated: those lines changed since it was made"
                : refused.reason === "noop"
                ? "The suggestion changes nothing"
                : `The suggestion cannot be applied: ${refused.message}`
            })
          )
        )
        return { applied: true, sha: result.sha }
      })

      return Suggestions.of({ apply })
    })
  )
}
