import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { EventPullRequest } from "../../schemas/PullRequestEvents.ts"
import type { AutoMerge, MergeableState, Person, PullRequest, PullRequestState } from "../../schemas/PullRequests.ts"
import type { RepoRecord } from "../git/Repositories.ts"

/** A pull request row with its author, merger and requested reviewers joined. */
export interface PrRow {
  readonly id: string
  readonly repo_id: string
  readonly org_id: string
  readonly number: number
  readonly title: string
  readonly body: string
  readonly state: PullRequestState
  readonly source_branch: string
  readonly target_branch: string
  readonly author_id: string
  readonly base_sha: string
  readonly head_sha: string
  readonly mergeable: boolean | null
  readonly conflicts: ReadonlyArray<string>
  readonly mergeable_state: MergeableState
  readonly labels: ReadonlyArray<string>
  readonly merged_at: Date | null
  readonly merged_by: string | null
  readonly merge_commit_sha: string | null
  readonly closed_at: Date | null
  readonly auto_merge: AutoMerge | null
  readonly last_activity_at: Date
  readonly stale_warned_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
  readonly author_username: string
  readonly author_name: string | null
  readonly author_email: string
  readonly merger_username: string | null
  readonly merger_name: string | null
  readonly merger_email: string | null
  readonly requested: ReadonlyArray<string>
}

/** The joined select every reader uses; append `WHERE …`. */
export const selectPullRequests = (sql: SqlClient.SqlClient) =>
  sql`
    SELECT p.*, a.username AS author_username, a.name AS author_name, a.email AS author_email,
      m.username AS merger_username, m.name AS merger_name, m.email AS merger_email,
      coalesce((SELECT array_agg(u.username ORDER BY u.username) FROM pr_review_requests rr
        JOIN users u ON u.id = rr.user_id WHERE rr.pr_id = p.id), '{}') AS requested
    FROM pull_requests p JOIN users a ON a.id = p.author_id LEFT JOIN users m ON m.id = p.merged_by`

export const personOf = (row: { id: string; username: string; name: string | null; email: string }): Person => ({
  id: row.id,
  username: row.username,
  name: row.name ?? row.username,
  email: row.email
})

export const authorOf = (row: PrRow): Person =>
  personOf({ id: row.author_id, username: row.author_username, name: row.author_name, email: row.author_email })

const iso = (date: Date | null) => date === null ? null : date.toISOString()

export const toPullRequest = (row: PrRow): PullRequest => ({
  id: row.id,
  number: row.number,
  title: row.title,
  body: row.body,
  state: row.state,
  isDraft: row.state === "draft",
  sourceBranch: row.source_branch,
  targetBranch: row.target_branch,
  baseSha: row.base_sha,
  headSha: row.head_sha,
  author: authorOf(row),
  mergeable: row.state === "open" || row.state === "draft" ? row.mergeable : null,
  mergeableState: row.state === "merged" || row.state === "closed"
    ? row.state
    : row.state === "draft" && row.mergeable !== false
    ? "draft"
    : row.mergeable_state,
  labels: row.labels,
  requestedReviewers: row.requested,
  autoMerge: row.auto_merge,
  mergedAt: iso(row.merged_at),
  mergedBy: row.merged_by === null ? null : personOf({
    id: row.merged_by,
    username: row.merger_username ?? "",
    name: row.merger_name,
    email: row.merger_email ?? ""
  }),
  mergeCommitSha: row.merge_commit_sha,
  closedAt: iso(row.closed_at),
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString()
})

/** The `pullRequest` object of the events and webhook payloads (spec 001). */
export const toEventPullRequest = (row: PrRow): EventPullRequest => ({
  id: row.id,
  number: row.number,
  title: row.title,
  body: row.body,
  state: row.state,
  sourceBranch: row.source_branch,
  targetBranch: row.target_branch,
  headSha: row.head_sha,
  author: { id: row.author_id, name: row.author_name ?? row.author_username }
})

export const eventRepository = (repo: RepoRecord) => ({
  id: repo.id,
  name: repo.name,
  fullName: `${repo.orgSlug}/${repo.slug}`
})

export const isOpen = (row: { readonly state: PullRequestState }) => row.state === "open" || row.state === "draft"

export const loadById = (id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<PrRow>`${selectPullRequests(sql)} WHERE p.id = ${id}`.pipe(Effect.orDie)
    return Option.fromNullishOr(rows[0])
  })

export const loadByNumber = (repoId: string, number: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<PrRow>`${selectPullRequests(sql)} WHERE p.repo_id = ${repoId} AND p.number = ${number}`
      .pipe(Effect.orDie)
    return Option.fromNullishOr(rows[0])
  })
