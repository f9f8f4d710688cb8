import { PgTypes } from "@effect/sql-pg"
import { Effect, Option, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type * as Statement from "effect/sql/Statement"
import { Category, Severity } from "../../schemas/ai/AiReviews.ts"
import { Suggestion } from "../../schemas/pulls/PullRequests.ts"
import { pgArray as column } from "../platform/PgArrayParam.ts"
import { decodeRows } from "../platform/Rows.ts"
import { userDirectory } from "../tenancy/Tenancy.ts"

/*
 * The `pr_comments` and `pr_suggestions` tables: their rows and every statement on them
 * (their one owner; the services run these in their own transactions).
 */

/** A stored suggestion; also the shape of its `to_jsonb` in a comment row. */
export const SuggestionRow = Schema.Struct({
  id: Schema.String,
  comment_id: Schema.NullOr(Schema.String),
  author_id: Schema.String,
  path: Schema.String,
  start_line: Schema.Int,
  end_line: Schema.Int,
  original_lines: Schema.Array(Schema.String),
  /** null: an AI suggestion that names a problem without exact new text. */
  replacement: Schema.NullOr(Schema.String),
  head_sha: Schema.String,
  state: Suggestion.fields.state,
  applied_sha: Schema.NullOr(Schema.String)
})
export type SuggestionRow = typeof SuggestionRow.Type

/** A comment with its author (none for Canopy's own) and its suggestion joined. */
export const CommentRow = Schema.Struct({
  id: Schema.String,
  body: Schema.String,
  author_id: Schema.NullOr(Schema.String),
  username: Schema.NullOr(Schema.String),
  name: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  path: Schema.NullOr(Schema.String),
  line: Schema.NullOr(Schema.Int),
  start_line: Schema.NullOr(Schema.Int),
  head_sha: Schema.String,
  created_at: Schema.Date,
  suggestion: Schema.NullOr(SuggestionRow)
})
export type CommentRow = typeof CommentRow.Type

/** Comments with their author and suggestion, by `rest` (`WHERE …`, `ORDER BY …`), decoded. */
export const findComments = (sql: SqlClient.SqlClient, rest: Statement.Fragment) =>
  sql`
    SELECT c.*, u.username, u.name, u.email,
      (SELECT to_jsonb(s) FROM pr_suggestions s WHERE s.comment_id = c.id LIMIT 1) AS suggestion
    FROM pr_comments c LEFT JOIN ${userDirectory(sql)} u ON u.id = c.author_id ${rest}`.pipe(decodeRows(CommentRow))

export interface NewCommentRow {
  readonly id: string
  readonly prId: string
  /** `null`: Canopy's own. */
  readonly authorId: string | null
  readonly body: string
  readonly path: string | null
  readonly line: number | null
  readonly startLine: number | null
  readonly headSha: string
  readonly now: Date
}

export const insertComment = (sql: SqlClient.SqlClient, row: NewCommentRow) =>
  sql`
    INSERT INTO pr_comments (id, pr_id, author_id, body, path, line, start_line, head_sha, created_at)
    VALUES (${row.id}, ${row.prId}, ${row.authorId}, ${row.body}, ${row.path}, ${row.line}, ${row.startLine},
      ${row.headSha}, ${row.now})`

export interface NewSuggestionRow {
  readonly id: string
  readonly prId: string
  readonly commentId: string
  readonly authorId: string
  readonly path: string
  readonly startLine: number
  readonly endLine: number
  /** The lines replaced, as they were at `headSha`. */
  readonly originalLines: ReadonlyArray<string>
  readonly replacement: string | null
  readonly headSha: string
  readonly now: Date
  /** An AI suggestion's review and classification (GUIDE §15); absent for human ones. */
  readonly ai?: {
    readonly reviewId: string
    readonly severity: string
    readonly category: string
    readonly title: string
  } | undefined
}

export const insertSuggestion = (sql: SqlClient.SqlClient, row: NewSuggestionRow) =>
  sql`
    INSERT INTO pr_suggestions (id, pr_id, comment_id, author_id, path, start_line, end_line, original_lines,
      replacement, head_sha, created_at, source, review_id, severity, category, title)
    VALUES (${row.id}, ${row.prId}, ${row.commentId}, ${row.authorId}, ${row.path}, ${row.startLine},
      ${row.endLine}, ${JSON.stringify(row.originalLines)}::jsonb, ${row.replacement}, ${row.headSha}, ${row.now},
      ${row.ai === undefined ? "user" : "ai"}, ${row.ai?.reviewId ?? null}, ${row.ai?.severity ?? null},
      ${row.ai?.category ?? null}, ${row.ai?.title ?? null})`

/*
 * Many rows in one round trip (an AI review's comments): `insertComment`/`insertSuggestion`
 * as one multi-row insert each, the rows as one typed array per column (`unnest`), to embed
 * as CTEs of a larger statement (`WITH c AS (${insertCommentsStatement(…)}), …`); `when`
 * (default true) makes them conditional on the rest of it. A suggestion's comment may be
 * inserted by a sibling CTE: the foreign key is checked at the end of the statement.
 */

const texts = (values: ReadonlyArray<string | null>) => column(values, PgTypes.OID.text)
const ints = (values: ReadonlyArray<number | null>) => column(values, PgTypes.OID.int4)
const stamps = (values: ReadonlyArray<Date>) => column(values, PgTypes.OID.timestamptz)

export const insertCommentsStatement = (
  sql: SqlClient.SqlClient,
  rows: ReadonlyArray<NewCommentRow>,
  when: Statement.Fragment = sql.literal("true")
) =>
  sql`
    INSERT INTO pr_comments (id, pr_id, author_id, body, path, line, start_line, head_sha, created_at)
    SELECT v.id, v.pr_id, v.author_id, v.body, v.path, v.line, v.start_line, v.head_sha, v.created_at
    FROM unnest(${texts(rows.map((r) => r.id))}::text[], ${texts(rows.map((r) => r.prId))}::text[],
      ${texts(rows.map((r) => r.authorId))}::text[], ${texts(rows.map((r) => r.body))}::text[],
      ${texts(rows.map((r) => r.path))}::text[], ${ints(rows.map((r) => r.line))}::int4[],
      ${ints(rows.map((r) => r.startLine))}::int4[], ${texts(rows.map((r) => r.headSha))}::text[],
      ${stamps(rows.map((r) => r.now))}::timestamptz[])
      WITH ORDINALITY AS v(id, pr_id, author_id, body, path, line, start_line, head_sha, created_at, n)
    WHERE ${when}
    ORDER BY v.n
    RETURNING 1`

export const insertSuggestionsStatement = (
  sql: SqlClient.SqlClient,
  rows: ReadonlyArray<NewSuggestionRow>,
  when: Statement.Fragment = sql.literal("true")
) =>
  sql`
    INSERT INTO pr_suggestions (id, pr_id, comment_id, author_id, path, start_line, end_line, original_lines,
      replacement, head_sha, created_at, source, review_id, severity, category, title)
    SELECT v.id, v.pr_id, v.comment_id, v.author_id, v.path, v.start_line, v.end_line, v.original_lines::jsonb,
      v.replacement, v.head_sha, v.created_at, v.source, v.review_id, v.severity, v.category, v.title
    FROM unnest(${texts(rows.map((r) => r.id))}::text[], ${texts(rows.map((r) => r.prId))}::text[],
      ${texts(rows.map((r) => r.commentId))}::text[], ${texts(rows.map((r) => r.authorId))}::text[],
      ${texts(rows.map((r) => r.path))}::text[], ${ints(rows.map((r) => r.startLine))}::int4[],
      ${ints(rows.map((r) => r.endLine))}::int4[],
      ${texts(rows.map((r) => JSON.stringify(r.originalLines)))}::text[],
      ${texts(rows.map((r) => r.replacement))}::text[], ${texts(rows.map((r) => r.headSha))}::text[],
      ${stamps(rows.map((r) => r.now))}::timestamptz[],
      ${texts(rows.map((r) => r.ai === undefined ? "user" : "ai"))}::text[],
      ${texts(rows.map((r) => r.ai?.reviewId ?? null))}::text[], ${
    texts(rows.map((r) => r.ai?.severity ?? null))
  }::text[],
      ${texts(rows.map((r) => r.ai?.category ?? null))}::text[], ${texts(rows.map((r) => r.ai?.title ?? null))}::text[])
      WITH ORDINALITY AS v(id, pr_id, comment_id, author_id, path, start_line, end_line, original_lines, replacement,
        head_sha, created_at, source, review_id, severity, category, title, n)
    WHERE ${when}
    ORDER BY v.n
    RETURNING 1`

export const findSuggestion = (sql: SqlClient.SqlClient, prId: string, id: string) =>
  sql`SELECT * FROM pr_suggestions WHERE pr_id = ${prId} AND id = ${id}`.pipe(
    decodeRows(SuggestionRow),
    Effect.map((rows) => Option.fromNullishOr(rows[0]))
  )

export const markSuggestionApplied = (sql: SqlClient.SqlClient, id: string, sha: string, appliedBy: string) =>
  sql`UPDATE pr_suggestions SET state = 'applied', applied_sha = ${sha}, applied_by = ${appliedBy} WHERE id = ${id}`

const AppliedBy = Schema.Struct({ applied_by: Schema.NullOr(Schema.String) })

/** Who applied the suggestion whose commit is `sha` on the pull request (none: no suggestion made it). */
export const suggestionApplier = (sql: SqlClient.SqlClient, prId: string, sha: string) =>
  sql`SELECT applied_by FROM pr_suggestions WHERE pr_id = ${prId} AND applied_sha = ${sha}`.pipe(
    decodeRows(AppliedBy),
    Effect.map((rows) => Option.fromNullishOr(rows[0]?.applied_by))
  )

/** An AI suggestion with its classification (GUIDE §15). */
export const AiSuggestionRow = Schema.Struct({
  ...SuggestionRow.fields,
  review_id: Schema.NullOr(Schema.String),
  severity: Severity,
  category: Category,
  title: Schema.String,
  body: Schema.NullOr(Schema.String),
  dismiss_reason: Schema.NullOr(Schema.String),
  pr_id: Schema.String
})
export type AiSuggestionRow = typeof AiSuggestionRow.Type

/** AI suggestions (with their comment's body) by `rest` (`WHERE …` on `s`, `ORDER BY …`). */
export const findAiSuggestions = (sql: SqlClient.SqlClient, rest: Statement.Fragment) =>
  sql`
    SELECT s.*, c.body FROM pr_suggestions s LEFT JOIN pr_comments c ON c.id = s.comment_id
    ${rest}`.pipe(decodeRows(AiSuggestionRow))

/** The AI suggestion `id` (a list of one, or none). */
export const aiSuggestionById = (sql: SqlClient.SqlClient, id: string) =>
  findAiSuggestions(sql, sql`WHERE s.id = ${id} AND s.source = 'ai'`)

/** The AI suggestions of a pull request. */
export const aiSuggestionsOfPull = (sql: SqlClient.SqlClient, prId: string) =>
  findAiSuggestions(sql, sql`WHERE s.pr_id = ${prId} AND s.source = 'ai'`)

/** The suggestions of a review, oldest first, or most severe first with `bySeverity`. */
export const suggestionsOfReview = (sql: SqlClient.SqlClient, reviewId: string, bySeverity: boolean) =>
  findAiSuggestions(
    sql,
    bySeverity
      ? sql`WHERE s.review_id = ${reviewId}
        ORDER BY array_position(ARRAY['critical', 'warning', 'info'], s.severity), s.created_at, s.id`
      : sql`WHERE s.review_id = ${reviewId} ORDER BY s.created_at, s.id`
  )

export const dismissSuggestion = (sql: SqlClient.SqlClient, id: string, reason: string | null) =>
  sql`
    UPDATE pr_suggestions SET state = 'dismissed', dismiss_reason = ${reason}
    WHERE id = ${id} AND state = 'open' RETURNING id`

/** A pull request's comments, oldest first. */
export const commentsOf = (sql: SqlClient.SqlClient, prId: string) =>
  findComments(sql, sql`WHERE c.pr_id = ${prId} ORDER BY c.created_at, c.id`)

export const commentById = (sql: SqlClient.SqlClient, id: string) => findComments(sql, sql`WHERE c.id = ${id}`)
