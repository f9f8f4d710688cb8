import { Array as Arr, Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type * as Statement from "effect/sql/Statement"
import { ReviewState } from "../../schemas/pulls/PullRequests.ts"
import { decodeRows } from "../platform/Rows.ts"
import { userDirectory, userIdsByUsername } from "../tenancy/Tenancy.ts"

/*
 * The `pr_reviews` and `pr_review_requests` tables: their rows and every statement on them
 * (their one owner; the services run these in their own transactions).
 */

/** A review with its reviewer joined. */
export const ReviewRow = Schema.Struct({
  id: Schema.String,
  state: ReviewState,
  body: Schema.String,
  reviewer_id: Schema.String,
  username: Schema.String,
  name: Schema.NullOr(Schema.String),
  email: Schema.String,
  head_sha: Schema.String,
  submitted_at: Schema.NullOr(Schema.Date),
  dismissed_at: Schema.NullOr(Schema.Date),
  dismiss_message: Schema.NullOr(Schema.String),
  created_at: Schema.Date
})
export type ReviewRow = typeof ReviewRow.Type

/** Reviews with their reviewer, by `rest` (`WHERE …`, `ORDER BY …`), decoded. */
export const findReviews = (sql: SqlClient.SqlClient, rest: Statement.Fragment) =>
  sql`SELECT r.*, u.username, u.name, u.email FROM pr_reviews r JOIN ${
    userDirectory(sql)
  } u ON u.id = r.reviewer_id ${rest}`.pipe(
    decodeRows(ReviewRow)
  )

export interface NewReviewRow {
  readonly id: string
  readonly prId: string
  readonly reviewerId: string
  readonly state: ReviewState
  readonly body: string
  readonly headSha: string
  readonly submittedAt: Date | null
  readonly now: Date
}

export const insertReview = (sql: SqlClient.SqlClient, row: NewReviewRow) =>
  sql`
    INSERT INTO pr_reviews (id, pr_id, reviewer_id, state, body, head_sha, submitted_at, created_at)
    VALUES (${row.id}, ${row.prId}, ${row.reviewerId}, ${row.state}, ${row.body}, ${row.headSha},
      ${row.submittedAt}, ${row.now})`

/** Submits a pending review on the head it is submitted on. */
export const submitReview = (
  sql: SqlClient.SqlClient,
  id: string,
  review: { readonly state: ReviewState; readonly body: string; readonly headSha: string; readonly now: Date }
) =>
  sql`
    UPDATE pr_reviews SET state = ${review.state}, body = ${review.body}, submitted_at = ${review.now},
      head_sha = ${review.headSha}
    WHERE id = ${id}`

export const dismissReview = (sql: SqlClient.SqlClient, id: string, message: string, now: Date) =>
  sql`UPDATE pr_reviews SET dismissed_at = ${now}, dismiss_message = ${message} WHERE id = ${id}`

/** A reviewer's latest submitted approval or change request, and whether it was dismissed. */
const LatestVerdictRow = Schema.Struct({
  reviewerId: Schema.String,
  username: Schema.String,
  state: Schema.Literals(["approved", "changes_requested"]),
  headSha: Schema.String,
  dismissed: Schema.Boolean
})

/** Every reviewer's latest submitted approval or change request on the pull request. */
export const latestVerdicts = (sql: SqlClient.SqlClient, prId: string) =>
  sql`
    SELECT DISTINCT ON (r.reviewer_id) r.reviewer_id AS "reviewerId", u.username, r.state,
      r.head_sha AS "headSha", r.dismissed_at IS NOT NULL AS dismissed
    FROM pr_reviews r JOIN ${userDirectory(sql)} u ON u.id = r.reviewer_id
    WHERE r.pr_id = ${prId} AND r.submitted_at IS NOT NULL AND r.state IN ('approved', 'changes_requested')
    ORDER BY r.reviewer_id, r.submitted_at DESC, r.created_at DESC`.pipe(decodeRows(LatestVerdictRow))

const RequestedRow = Schema.Struct({ user_id: Schema.String })

/** Requests review from `userIds`; answers the users not requested before. */
export const insertReviewRequests = (
  sql: SqlClient.SqlClient,
  prId: string,
  userIds: Arr.NonEmptyReadonlyArray<string>,
  source: "manual" | "codeowners"
) =>
  sql`
    INSERT INTO pr_review_requests ${
    sql.insert(Arr.map(userIds, (userId) => ({ pr_id: prId, user_id: userId, source })))
  }
    ON CONFLICT (pr_id, user_id) DO NOTHING RETURNING user_id`.pipe(decodeRows(RequestedRow))

export const deleteReviewRequests = (sql: SqlClient.SqlClient, prId: string, usernames: ReadonlyArray<string>) =>
  sql`
    DELETE FROM pr_review_requests WHERE pr_id = ${prId}
      AND user_id IN ${userIdsByUsername(sql, usernames)}`

/** The users requested as code owners of the changed files. */
export const codeOwnerRequests = (sql: SqlClient.SqlClient, prId: string) =>
  sql`SELECT user_id FROM pr_review_requests WHERE pr_id = ${prId} AND source = 'codeowners'`.pipe(
    decodeRows(RequestedRow),
    Effect.map((rows) => rows.map((row) => row.user_id))
  )

export const reviewById = (sql: SqlClient.SqlClient, prId: string, id: string) =>
  findReviews(sql, sql`WHERE r.pr_id = ${prId} AND r.id = ${id}`)

/** A pull request's reviews, oldest first. */
export const reviewsOf = (sql: SqlClient.SqlClient, prId: string) =>
  findReviews(sql, sql`WHERE r.pr_id = ${prId} ORDER BY r.created_at, r.id`)
