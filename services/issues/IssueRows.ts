import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import {
  IssueClosedEvent,
  type IssuePerson,
  IssueState,
  type RepositoryIssue
} from "../../schemas/issues/RepositoryIssues.ts"
import { publish } from "../events/Events.ts"
import type { RepoRecord } from "../git/Repositories.ts"
import { decodeRows } from "../platform/Rows.ts"

/**
 * The `repo_issues` table: its row and every statement on it (its one owner), shared by the
 * issue services and `Fixes #n`; they run in the caller's transaction.
 */

const IssueCountRow = Schema.Struct({ count: Schema.Int })

/** An issue as stored (`ISSUE_COLUMNS`). */
export const IssueRow = Schema.Struct({
  id: Schema.String,
  number: Schema.Int,
  title: Schema.String,
  body: Schema.String,
  state: IssueState,
  labels: Schema.Array(Schema.String),
  author_id: Schema.String,
  author_name: Schema.String,
  closed_at: Schema.NullOr(Schema.Date),
  closed_by_pr_id: Schema.NullOr(Schema.String),
  closed_by_pr_number: Schema.NullOr(Schema.Int),
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type IssueRow = typeof IssueRow.Type

const ISSUE_COLUMNS = "id, number, title, body, state, labels, author_id, author_name, closed_at, " +
  "closed_by_pr_id, closed_by_pr_number, created_at, updated_at"

/** The rows a statement returns as issues, decoded. */
const issueRows = decodeRows(IssueRow)

export const toIssue = (row: IssueRow): RepositoryIssue => ({
  id: row.id,
  number: row.number,
  title: row.title,
  body: row.body,
  state: row.state,
  labels: [...row.labels],
  author: { id: row.author_id, name: row.author_name },
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
  closedAt: row.closed_at?.toISOString() ?? null,
  closedBy: row.closed_by_pr_id === null || row.closed_by_pr_number === null
    ? null
    : { id: row.closed_by_pr_id, number: row.closed_by_pr_number }
})

/** Labels as stored: trimmed, without duplicates, in the order given. */
export const cleanLabels = (labels: ReadonlyArray<string>): ReadonlyArray<string> => [
  ...new Set(labels.map((label) => label.trim()))
]

/** The `repository` of event payloads. */
export const eventRepository = (repo: RepoRecord) => ({
  id: repo.id,
  name: repo.name,
  fullName: `${repo.orgSlug}/${repo.slug}`
})

/** One issue of a repository by number, locked for update when `forUpdate`. */
export const selectIssue = (repoId: string, number: number, forUpdate: boolean) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`
      SELECT ${sql.literal(ISSUE_COLUMNS)} FROM repo_issues
      WHERE repo_id = ${repoId} AND number = ${number} ${sql.literal(forUpdate ? "FOR UPDATE" : "")}`.pipe(issueRows)
    return rows.length === 0 ? undefined : rows[0]
  })

/** A page of a repository's issues in `state` (`all`: any), newest first. */
export const listIssues = (
  sql: SqlClient.SqlClient,
  repoId: string,
  page: { readonly state: "open" | "closed" | "all"; readonly limit: number; readonly offset: number }
) =>
  sql`
    SELECT ${sql.literal(ISSUE_COLUMNS)} FROM repo_issues
    WHERE repo_id = ${repoId} ${page.state === "all" ? sql`` : sql`AND state = ${page.state}`}
    ORDER BY number DESC LIMIT ${page.limit} OFFSET ${page.offset}`.pipe(issueRows)

/** How many issues of the repository match the state filter (a list's `count`). */
export const countIssues = (sql: SqlClient.SqlClient, repoId: string, state: "open" | "closed" | "all") =>
  sql`
    SELECT count(*)::int AS count FROM repo_issues
    WHERE repo_id = ${repoId} ${state === "all" ? sql`` : sql`AND state = ${state}`}`.pipe(
    decodeRows(IssueCountRow),
    Effect.map((rows) => rows[0].count)
  )

export interface NewIssueRow {
  readonly id: string
  readonly repoId: string
  readonly number: number
  readonly title: string
  readonly body: string
  readonly labels: ReadonlyArray<string>
  readonly author: IssuePerson
}

export const insertIssue = (sql: SqlClient.SqlClient, row: NewIssueRow) =>
  sql`
    INSERT INTO repo_issues (id, repo_id, number, title, body, labels, author_id, author_name)
    VALUES (${row.id}, ${row.repoId}, ${row.number}, ${row.title}, ${row.body},
      ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(row.labels)}::jsonb)),
      ${row.author.id}, ${row.author.name})
    RETURNING ${sql.literal(ISSUE_COLUMNS)}`.pipe(issueRows, Effect.map((rows) => rows[0]))

/** Sets title, body and labels, reopening the issue when `reopen`; the issue as updated. */
export const editIssue = (
  sql: SqlClient.SqlClient,
  id: string,
  edit: {
    readonly title: string
    readonly body: string
    readonly labels: ReadonlyArray<string>
    readonly reopen: boolean
  }
) => {
  const reopen = edit.reopen
    ? sql`, state = 'open', closed_at = NULL, closed_by_pr_id = NULL, closed_by_pr_number = NULL`
    : sql``
  return sql`
    UPDATE repo_issues SET title = ${edit.title}, body = ${edit.body}, updated_at = now(),
      labels = ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(edit.labels)}::jsonb)) ${reopen}
    WHERE id = ${id}
    RETURNING ${sql.literal(ISSUE_COLUMNS)}`.pipe(issueRows, Effect.map((rows) => rows[0]))
}

/** Touches an issue's `updatedAt` (a comment on it); the issue, if the number names one. */
export const touchIssue = (sql: SqlClient.SqlClient, repoId: string, number: number) =>
  sql`
    UPDATE repo_issues SET updated_at = now() WHERE repo_id = ${repoId} AND number = ${number}
    RETURNING ${sql.literal(ISSUE_COLUMNS)}`.pipe(
    issueRows,
    Effect.map((rows) => rows.length === 0 ? undefined : rows[0])
  )

/**
 * Closes an open issue (inside the caller's transaction) and publishes `issue.closed`;
 * `pullRequest` is recorded as `closedBy`. Returns the closed issue.
 */
export const closeIssueRow = (input: {
  readonly repo: RepoRecord
  readonly issueId: string
  readonly actor: IssuePerson | null
  readonly pullRequest: { readonly id: string; readonly number: number } | null
}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql`
      UPDATE repo_issues
      SET state = 'closed', closed_at = now(), updated_at = now(),
        closed_by_pr_id = ${input.pullRequest?.id ?? null}, closed_by_pr_number = ${input.pullRequest?.number ?? null}
      WHERE id = ${input.issueId}
      RETURNING ${sql.literal(ISSUE_COLUMNS)}`.pipe(issueRows)
    const issue = toIssue(row)
    yield* publish(IssueClosedEvent.make(input.repo.orgId, {
      repository: eventRepository(input.repo),
      issue,
      sender: input.actor,
      timestamp: issue.updatedAt
    }))
    return issue
  })
