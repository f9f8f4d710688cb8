import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { IssueClosedEvent, type IssuePerson, type RepositoryIssue } from "../../schemas/RepositoryIssues.ts"
import type { RepoRecord } from "../git/Repositories.ts"
import { publish } from "../platform/Events.ts"

/** Reading and writing `repo_issues` rows, shared by the issue services and `Fixes #n`. */

export interface IssueRow {
  readonly id: string
  readonly number: number
  readonly title: string
  readonly body: string
  readonly state: "open" | "closed"
  readonly labels: ReadonlyArray<string>
  readonly author_id: string
  readonly author_name: string
  readonly closed_at: Date | null
  readonly closed_by_pr_id: string | null
  readonly closed_by_pr_number: number | null
  readonly created_at: Date
  readonly updated_at: Date
}

export const ISSUE_COLUMNS = "id, number, title, body, state, labels, author_id, author_name, closed_at, " +
  "closed_by_pr_id, closed_by_pr_number, created_at, updated_at"

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
    const rows = yield* sql<IssueRow>`
      SELECT ${sql.literal(ISSUE_COLUMNS)} FROM repo_issues
      WHERE repo_id = ${repoId} AND number = ${number} ${sql.literal(forUpdate ? "FOR UPDATE" : "")}`
    return rows[0] as IssueRow | undefined
  })

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
    const [row] = yield* sql<IssueRow>`
      UPDATE repo_issues
      SET state = 'closed', closed_at = now(), updated_at = now(),
        closed_by_pr_id = ${input.pullRequest?.id ?? null}, closed_by_pr_number = ${input.pullRequest?.number ?? null}
      WHERE id = ${input.issueId}
      RETURNING ${sql.literal(ISSUE_COLUMNS)}`
    const issue = toIssue(row)
    yield* publish(IssueClosedEvent.make(input.repo.orgId, {
      repository: eventRepository(input.repo),
      issue,
      sender: input.actor,
      timestamp: issue.updatedAt
    }))
    return issue
  })
