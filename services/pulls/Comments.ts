import { Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { Conflict, ValidationError } from "../../schemas/platform/Errors.ts"
import {
  type Comment,
  type CommentList,
  type CreateComment,
  type Suggestion,
  Unprocessable
} from "../../schemas/pulls/PullRequests.ts"
import { gitText } from "../git/GitProcess.ts"
import { RepoCache } from "../git/RepoCache.ts"
import { makeId } from "../platform/Ids.ts"
import type { Actor } from "../tenancy/Actor.ts"
import {
  commentById,
  type CommentRow,
  commentsOf,
  findSuggestion,
  insertComment,
  insertSuggestion,
  type SuggestionRow
} from "./CommentRows.ts"
import { diffAgainstMergeBase, newSideLines, parseDiff } from "./PullDiff.ts"
import { isOpen, personOf, touchActivity } from "./PullRequestRows.ts"
import type { PullContext } from "./PullRequests.ts"

export const toSuggestion = (row: SuggestionRow): Suggestion => ({
  id: row.id,
  commentId: row.comment_id,
  path: row.path,
  startLine: row.start_line,
  endLine: row.end_line,
  originalLines: row.original_lines,
  replacement: row.replacement,
  headSha: row.head_sha,
  state: row.state,
  appliedSha: row.applied_sha
})

const toComment = (row: CommentRow): Comment => ({
  id: row.id,
  body: row.body,
  author: row.author_id === null
    ? null
    : personOf({ id: row.author_id, username: row.username ?? "", name: row.name, email: row.email ?? "" }),
  path: row.path,
  line: row.line,
  startLine: row.start_line,
  headSha: row.head_sha,
  suggestion: row.suggestion === null ? null : toSuggestion(row.suggestion),
  createdAt: row.created_at.toISOString()
})

/** The replacement text of the first ```suggestion block of a comment, if any. */
export const suggestionOf = (body: string): string | undefined => {
  const match = /^```suggestion[ \t]*\r?\n([\s\S]*?)^```[ \t]*$/m.exec(body)
  if (match === null) return /^```suggestion[ \t]*\r?\n```[ \t]*$/m.test(body) ? "" : undefined
  return match[1].replace(/\r?\n$/, "")
}

const invalid = (path: string, message: string) =>
  new ValidationError({ message: `Invalid ${path}: ${message}`, details: [{ path, message }] })

/**
 * Comments on a pull request (GUIDE §11): general ones, and inline ones on a line of the
 * new side that the diff shows (else 422). An inline comment with a ```suggestion block
 * also records a suggestion: the lines it replaces as they are at the current head, so
 * applying it can tell whether it is outdated.
 */
export class Comments extends Context.Service<Comments, {
  list(pull: PullContext): Effect.Effect<CommentList>
  create(
    pull: PullContext,
    actor: Actor | null,
    input: CreateComment
  ): Effect.Effect<Comment, ValidationError | Unprocessable | Conflict>
  /** A comment by Canopy itself (stale warnings, auto-merge failures), in the caller's transaction. */
  system(prId: string, headSha: string, body: string): Effect.Effect<void, never, SqlClient.SqlClient>
  suggestion(pull: PullContext, id: string): Effect.Effect<Option.Option<SuggestionRow>>
}>()("canopy/pulls/Comments") {
  static readonly layer = Layer.effect(
    Comments,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const cache = yield* RepoCache
      const list = (pull: PullContext) =>
        commentsOf(sql, pull.row.id).pipe(
          Effect.orDie,
          Effect.map((rows) => ({ comments: rows.map(toComment), count: rows.length }))
        )

      /** Checks the inline position against the diff; answers the original lines of the range. */
      const inlinePosition = (pull: PullContext, path: string, startLine: number, line: number) =>
        cache.use(pull.repo, (synced) =>
          Effect.gen(function*() {
            const objects = { dir: synced.dir, env: {} }
            const files = parseDiff(yield* diffAgainstMergeBase(objects, pull.row.base_sha, pull.row.head_sha))
            const file = files.find((candidate) => candidate.path === path)
            if (file === undefined || file.status === "removed") {
              return yield* new Unprocessable({
                message: `'${path}' is not changed by this pull request`,
                details: [{ path: "body.path", message: "not a file of the diff" }]
              })
            }
            const shown = newSideLines(file.patch)
            for (let n = startLine; n <= line; n++) {
              if (!shown.has(n)) {
                return yield* new Unprocessable({
                  message: `Line ${n} of '${path}' is not part of the diff`,
                  details: [{ path: "body.line", message: "must be a line of the new side shown in the diff" }]
                })
              }
            }
            const content = yield* gitText({ gitDir: synced.dir, args: ["show", `${pull.row.head_sha}:${path}`] })
            return content.split("\n").slice(startLine - 1, line)
          })).pipe(Effect.catchTags({ GitStorageError: Effect.die, GitCommandError: Effect.die }))

      const create = Effect.fn("Comments.create")(function*(
        pull: PullContext,
        actor: Actor | null,
        input: CreateComment
      ) {
        if (!isOpen(pull.row) && input.path !== undefined) {
          return yield* new Conflict({ message: `Pull request #${pull.row.number} is ${pull.row.state}` })
        }
        if ((input.path === undefined) !== (input.line === undefined)) {
          return yield* invalid(input.path === undefined ? "body.path" : "body.line", "path and line go together")
        }
        if (input.startLine !== undefined && (input.line === undefined || input.startLine > input.line)) {
          return yield* invalid("body.startLine", "must be at most line")
        }
        const id = makeId("cmt")
        const now = new Date(yield* Clock.currentTimeMillis)
        let suggestion: { lines: ReadonlyArray<string>; replacement: string } | undefined
        if (input.path !== undefined && input.line !== undefined) {
          const startLine = input.startLine ?? input.line
          const lines = yield* inlinePosition(pull, input.path, startLine, input.line)
          const replacement = suggestionOf(input.body)
          if (replacement !== undefined) suggestion = { lines, replacement }
        }
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* insertComment(sql, {
            id,
            prId: pull.row.id,
            authorId: actor?.id ?? null,
            body: input.body,
            path: input.path ?? null,
            line: input.line ?? null,
            startLine: input.path === undefined ? null : (input.startLine ?? input.line ?? null),
            headSha: pull.row.head_sha,
            now
          })
          if (suggestion !== undefined && actor !== null) {
            yield* insertSuggestion(sql, {
              id: makeId("sug"),
              prId: pull.row.id,
              commentId: id,
              authorId: actor.id,
              path: input.path!,
              startLine: input.startLine ?? input.line!,
              endLine: input.line!,
              originalLines: suggestion.lines,
              replacement: suggestion.replacement,
              headSha: pull.row.head_sha,
              now
            })
          }
          yield* touchActivity(sql, pull.row.id, now)
        })).pipe(Effect.orDie)
        const [row] = yield* commentById(sql, id).pipe(Effect.orDie)
        return toComment(row)
      })

      const system = (prId: string, headSha: string, body: string) =>
        Effect.gen(function*() {
          const now = new Date(yield* Clock.currentTimeMillis)
          const client = yield* SqlClient.SqlClient
          yield* insertComment(client, {
            id: makeId("cmt"),
            prId,
            authorId: null,
            body,
            path: null,
            line: null,
            startLine: null,
            headSha,
            now
          }).pipe(Effect.orDie)
        })

      const suggestion = (pull: PullContext, id: string) => findSuggestion(sql, pull.row.id, id).pipe(Effect.orDie)

      return Comments.of({ list, create, system, suggestion })
    })
  )
}

/** The suggestion and comment statements AI review shares (it writes through the pulls' tables' owner). */
export {
  aiSuggestionById,
  type AiSuggestionRow,
  aiSuggestionsOfPull,
  dismissSuggestion,
  findAiSuggestions,
  insertComment,
  insertCommentsStatement,
  insertSuggestion,
  insertSuggestionsStatement,
  suggestionApplier,
  suggestionsOfReview
} from "./CommentRows.ts"
