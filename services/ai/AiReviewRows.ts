import { Effect, Option, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type * as Statement from "effect/sql/Statement"
import { AiReview, ReviewStatus, Sentiment } from "../../schemas/ai/AiReviews.ts"
import { appendStatement, type NewDomainEvent, notifySql } from "../events/Events.ts"
import { decodeRows } from "../platform/Rows.ts"

/* The `ai_reviews` table: its row and every statement on it. */

export const AiReviewRow = Schema.Struct({
  id: Schema.String,
  pr_id: Schema.String,
  repo_id: Schema.String,
  org_id: Schema.String,
  head_sha: Schema.String,
  trigger: AiReview.fields.trigger,
  status: ReviewStatus,
  summary: Schema.NullOr(Schema.String),
  overall_sentiment: Schema.NullOr(Sentiment),
  suggestions_count: Schema.Int,
  security_issues: Schema.Int,
  performance_issues: Schema.Int,
  provider: Schema.String,
  model: Schema.String,
  input_tokens: Schema.Int,
  output_tokens: Schema.Int,
  skipped_files: Schema.Array(Schema.String),
  error: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  started_at: Schema.NullOr(Schema.Date),
  completed_at: Schema.NullOr(Schema.Date)
})
export type AiReviewRow = typeof AiReviewRow.Type

const columns = (sql: SqlClient.SqlClient) =>
  sql`id, pr_id, repo_id, org_id, head_sha, trigger, status, summary, overall_sentiment, suggestions_count,
    security_issues, performance_issues, provider, model, input_tokens, output_tokens, skipped_files, error,
    created_at, started_at, completed_at`

export const insertReview = (sql: SqlClient.SqlClient, row: {
  readonly id: string
  readonly prId: string
  readonly repoId: string
  readonly orgId: string
  readonly headSha: string
  readonly trigger: "auto" | "manual"
  readonly provider: string
  readonly model: string
}) =>
  sql`
    INSERT INTO ai_reviews (id, pr_id, repo_id, org_id, head_sha, trigger, provider, model)
    VALUES (${row.id}, ${row.prId}, ${row.repoId}, ${row.orgId}, ${row.headSha}, ${row.trigger}, ${row.provider},
      ${row.model})`

export const latestReview = (sql: SqlClient.SqlClient, prId: string) =>
  sql`SELECT ${columns(sql)} FROM ai_reviews WHERE pr_id = ${prId} ORDER BY seq DESC LIMIT 1`.pipe(
    decodeRows(AiReviewRow),
    Effect.map((rows) => Option.fromNullishOr(rows[0]))
  )

export const reviewById = (sql: SqlClient.SqlClient, id: string) =>
  sql`SELECT ${columns(sql)} FROM ai_reviews WHERE id = ${id}`.pipe(
    decodeRows(AiReviewRow),
    Effect.map((rows) => Option.fromNullishOr(rows[0]))
  )

/**
 * What a review's claim or completion writes with it in its one statement: other rows
 * (CTE bodies, each inserting only when `when`, the claim or completion, holds) and events,
 * appended in order under the same condition.
 */
export interface WithIt {
  readonly writes: (when: Statement.Fragment) => ReadonlyArray<Statement.Fragment>
  readonly events: ReadonlyArray<NewDomainEvent>
  /** The publishing span's `traceparent` for the events (`currentTraceparent`; null: tracing off). */
  readonly traceparent?: string | null
}

/** `WITH <name> AS (<change> RETURNING …), …writes, appended AS (…) SELECT <the row> FROM <name>`. */
const changeWith = (sql: SqlClient.SqlClient, name: string, change: Statement.Fragment, also: WithIt) => {
  const when = sql`EXISTS (SELECT 1 FROM ${sql(name)})`
  const writes = also.writes(when).map((write, i) => sql`${sql(`write_${i}`)} AS (${write}),`)
  return sql`
    WITH ${sql(name)} AS (${change} RETURNING *),
    ${sql.join(" ", false)(writes)}
    appended AS (${appendStatement(sql, also.events, when, also.traceparent ?? null)})
    SELECT ${columns(sql)}, ${notifySql(sql, "appended")} AS notified FROM ${sql(name)}`.pipe(
    decodeRows(AiReviewRow),
    Effect.map((rows) => Option.fromNullishOr(rows[0]))
  )
}

/**
 * Starts `id` unless another runner did or it was superseded, in one statement: older
 * unfinished reviews of its pull request are superseded by it, and `also` (its
 * `ai_review.started` event, its `pending` status) is written only when the claim succeeds;
 * the started row.
 */
export const startReview = (sql: SqlClient.SqlClient, id: string, now: Date, superseding: string, also: WithIt) =>
  changeWith(
    sql,
    "claimed",
    sql`UPDATE ai_reviews SET status = 'running', started_at = ${now} WHERE id = ${id} AND status = 'queued'`,
    {
      writes: (when) => [
        sql`
          UPDATE ai_reviews o SET status = 'failed', completed_at = ${now}, error = ${superseding}
          FROM claimed c
          WHERE o.pr_id = c.pr_id AND o.id <> c.id AND o.status IN ('queued', 'running') AND o.seq < c.seq
          RETURNING 1`,
        ...also.writes(when)
      ],
      events: also.events,
      traceparent: also.traceparent ?? null
    }
  )

export interface ReviewResult {
  readonly summary: string
  readonly sentiment: string
  readonly suggestions: number
  readonly security: number
  readonly performance: number
  readonly inputTokens: number
  readonly outputTokens: number
  readonly skipped: ReadonlyArray<string>
  readonly now: Date
}

/**
 * Completes `id` while it is `running`, in one statement with `also` (its comments and
 * suggestions, its `ai_review.completed` event and its status); the completed row, none when
 * the review is no longer running (superseded meanwhile: nothing is written).
 */
export const completeReview = (sql: SqlClient.SqlClient, id: string, result: ReviewResult, also: WithIt) =>
  changeWith(
    sql,
    "completed",
    sql`
      UPDATE ai_reviews SET status = 'completed', summary = ${result.summary},
        overall_sentiment = ${result.sentiment}, suggestions_count = ${result.suggestions},
        security_issues = ${result.security}, performance_issues = ${result.performance},
        input_tokens = ${result.inputTokens}, output_tokens = ${result.outputTokens},
        skipped_files = ${JSON.stringify(result.skipped)}::jsonb, completed_at = ${result.now}
      WHERE id = ${id} AND status = 'running'`,
    also
  )

export const failReview = (sql: SqlClient.SqlClient, id: string, error: string, usage: {
  readonly inputTokens: number
  readonly outputTokens: number
}, now: Date) =>
  sql`
    UPDATE ai_reviews SET status = 'failed', error = ${error}, input_tokens = GREATEST(input_tokens, ${usage.inputTokens}),
      output_tokens = GREATEST(output_tokens, ${usage.outputTokens}), completed_at = ${now}
    WHERE id = ${id} AND status IN ('queued', 'running') RETURNING id`.pipe(Effect.map((rows) => rows.length > 0))

/** Queued reviews no runner started within `olderThanMs` (a lost wake-up, a restart). */
export const strandedReviews = (sql: SqlClient.SqlClient, before: Date) =>
  sql`SELECT id, pr_id FROM ai_reviews WHERE status = 'queued' AND created_at < ${before} LIMIT 100`.pipe(
    decodeRows(Schema.Struct({ id: Schema.String, pr_id: Schema.String }))
  )

const IdRow = Schema.Struct({ id: Schema.String })

/** Up to 100 reviews still `running` that started before `before` (their runner is gone). */
export const abandonedReviews = (sql: SqlClient.SqlClient, before: Date) =>
  sql`
    SELECT id FROM ai_reviews WHERE status = 'running'
      AND started_at < ${before} LIMIT 100`.pipe(decodeRows(IdRow))
