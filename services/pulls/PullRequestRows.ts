import { Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type * as Statement from "effect/sql/Statement"
import type { EventPullRequest } from "../../schemas/pulls/PullRequestEvents.ts"
import {
  AutoMerge,
  MergeableState,
  type Person,
  type PullRequest,
  PullRequestState
} from "../../schemas/pulls/PullRequests.ts"
import { type RepoRecord, repositoryStaleSettings } from "../git/Repositories.ts"
import { decodeRows } from "../platform/Rows.ts"
import { userDirectory } from "../tenancy/Tenancy.ts"

/*
 * The `pull_requests` table: its row, how the API and events present it, and every statement
 * on it (the table's one owner; the services run these in their own transactions).
 */

/** A pull request row with its author, merger and requested reviewers joined; rows are decoded with it. */
export const PrRow = Schema.Struct({
  id: Schema.String,
  repo_id: Schema.String,
  org_id: Schema.String,
  number: Schema.Int,
  title: Schema.String,
  body: Schema.String,
  state: PullRequestState,
  source_branch: Schema.String,
  target_branch: Schema.String,
  author_id: Schema.String,
  base_sha: Schema.String,
  head_sha: Schema.String,
  mergeable: Schema.NullOr(Schema.Boolean),
  conflicts: Schema.Array(Schema.String),
  mergeable_state: MergeableState,
  labels: Schema.Array(Schema.String),
  merged_at: Schema.NullOr(Schema.Date),
  merged_by: Schema.NullOr(Schema.String),
  merge_commit_sha: Schema.NullOr(Schema.String),
  closed_at: Schema.NullOr(Schema.Date),
  auto_merge: Schema.NullOr(AutoMerge),
  last_activity_at: Schema.Date,
  stale_warned_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date,
  updated_at: Schema.Date,
  author_username: Schema.String,
  author_name: Schema.NullOr(Schema.String),
  author_email: Schema.String,
  merger_username: Schema.NullOr(Schema.String),
  merger_name: Schema.NullOr(Schema.String),
  merger_email: Schema.NullOr(Schema.String),
  requested: Schema.Array(Schema.String)
})
export type PrRow = typeof PrRow.Type

/** The id a conditional write or a lookup of ids returns. */
const IdRow = Schema.Struct({ id: Schema.String })

/** The joined select every reader uses; append `WHERE …`. */
const selectPullRequests = (sql: SqlClient.SqlClient) =>
  sql`
    SELECT p.*, a.username AS author_username, a.name AS author_name, a.email AS author_email,
      m.username AS merger_username, m.name AS merger_name, m.email AS merger_email,
      coalesce((SELECT array_agg(u.username ORDER BY u.username) FROM pr_review_requests rr
        JOIN ${userDirectory(sql)} u ON u.id = rr.user_id WHERE rr.pr_id = p.id), '{}') AS requested
    FROM pull_requests p JOIN ${userDirectory(sql)} a ON a.id = p.author_id
      LEFT JOIN ${userDirectory(sql)} m ON m.id = p.merged_by`

/** Pull requests by the joined select and `rest` (`WHERE …`, `ORDER BY …`), decoded. */
export const findPullRequests = (sql: SqlClient.SqlClient, rest: Statement.Fragment) =>
  sql`${selectPullRequests(sql)} ${rest}`.pipe(decodeRows(PrRow), Effect.orDie)

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
    const rows = yield* findPullRequests(sql, sql`WHERE p.id = ${id}`)
    return Option.fromNullishOr(rows[0])
  })

export const loadByNumber = (repoId: string, number: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* findPullRequests(sql, sql`WHERE p.repo_id = ${repoId} AND p.number = ${number}`)
    return Option.fromNullishOr(rows[0])
  })

/* Writes, and the id lookups of the entity's signals and sweep. */

/** The label a stale pull request carries until its next activity. */
export const STALE_LABEL = "stale"

export interface NewPullRequestRow {
  readonly id: string
  readonly repoId: string
  readonly orgId: string
  readonly number: number
  readonly title: string
  readonly body: string
  readonly state: PullRequestState
  readonly sourceBranch: string
  readonly targetBranch: string
  readonly authorId: string
  readonly baseSha: string
  readonly headSha: string
  readonly now: Date
}

export const insertPullRequest = (sql: SqlClient.SqlClient, row: NewPullRequestRow) =>
  sql`
    INSERT INTO pull_requests (id, repo_id, org_id, number, title, body, state, source_branch, target_branch,
      author_id, base_sha, head_sha, last_activity_at, created_at, updated_at)
    VALUES (${row.id}, ${row.repoId}, ${row.orgId}, ${row.number}, ${row.title}, ${row.body}, ${row.state},
      ${row.sourceBranch}, ${row.targetBranch}, ${row.authorId}, ${row.baseSha}, ${row.headSha}, ${row.now},
      ${row.now}, ${row.now})`

/** The fields a PATCH (title, body, state, draft) sets. */
export interface PullRequestEdit {
  readonly title: string
  readonly body: string
  readonly state: PullRequestState
  readonly closedAt: Date | null
  readonly autoMerge: AutoMerge | null
  readonly lastActivityAt: Date
  readonly staleWarnedAt: Date | null
  readonly now: Date
}

export const updatePullRequest = (sql: SqlClient.SqlClient, id: string, edit: PullRequestEdit) =>
  sql`
    UPDATE pull_requests SET title = ${edit.title}, body = ${edit.body}, state = ${edit.state},
      closed_at = ${edit.closedAt}, auto_merge = ${
    edit.autoMerge === null ? null : JSON.stringify(edit.autoMerge)
  }::jsonb,
      last_activity_at = ${edit.lastActivityAt}, stale_warned_at = ${edit.staleWarnedAt}, updated_at = ${edit.now}
    WHERE id = ${id}`

/** Activity (a review, a comment) lifts the stale label and restarts the stale count. */
export const touchActivity = (sql: SqlClient.SqlClient, id: string, now: Date) =>
  sql`
    UPDATE pull_requests SET last_activity_at = ${now}, stale_warned_at = NULL,
      labels = array_remove(labels, ${STALE_LABEL}), updated_at = ${now}
    WHERE id = ${id}`

export const markMerged = (
  sql: SqlClient.SqlClient,
  id: string,
  merge: { readonly now: Date; readonly mergedBy: string; readonly sha: string; readonly head: string }
) =>
  sql`
    UPDATE pull_requests SET state = 'merged', merged_at = ${merge.now}, merged_by = ${merge.mergedBy},
      merge_commit_sha = ${merge.sha}, head_sha = ${merge.head}, closed_at = ${merge.now}, auto_merge = NULL,
      mergeable_state = 'merged', updated_at = ${merge.now}
    WHERE id = ${id}`

/** Closes every open pull request of a repository (archived or deleted); the ids closed. */
export const closeAllOpen = (sql: SqlClient.SqlClient, repoId: string, now: Date) =>
  sql`
    UPDATE pull_requests SET state = 'closed', closed_at = ${now}, auto_merge = NULL, updated_at = ${now}
    WHERE repo_id = ${repoId} AND state IN ('open', 'draft')
    RETURNING id`.pipe(decodeRows(IdRow))

/** A transferred repository's pull requests belong to its new organization. */
export const moveToOrganization = (sql: SqlClient.SqlClient, repoId: string, orgId: string) =>
  sql`UPDATE pull_requests SET org_id = ${orgId} WHERE repo_id = ${repoId}`

/** Turns auto-merge on with its setting, or off (`null`). */
export const setAutoMerge = (sql: SqlClient.SqlClient, id: string, setting: AutoMerge | null) =>
  sql`
    UPDATE pull_requests SET auto_merge = ${setting === null ? null : JSON.stringify(setting)}::jsonb,
      updated_at = now()
    WHERE id = ${id}`

/** Closes a stale pull request, unless activity came after `lastActivityAt`; the id if it did. */
export const closeStale = (sql: SqlClient.SqlClient, id: string, lastActivityAt: Date, now: Date) =>
  sql`
    UPDATE pull_requests SET state = 'closed', closed_at = ${now}, auto_merge = NULL, updated_at = ${now}
    WHERE id = ${id} AND state IN ('open', 'draft')
      AND date_trunc('milliseconds', last_activity_at) = ${lastActivityAt}
    RETURNING id`.pipe(decodeRows(IdRow))

/** Labels a pull request stale and notes when, unless activity came after `lastActivityAt`. */
export const markStale = (sql: SqlClient.SqlClient, id: string, lastActivityAt: Date, now: Date) =>
  sql`
    UPDATE pull_requests SET stale_warned_at = ${now},
      labels = array_append(array_remove(labels, ${STALE_LABEL}), ${STALE_LABEL})
    WHERE id = ${id} AND date_trunc('milliseconds', last_activity_at) = ${lastActivityAt}
    RETURNING id`.pipe(decodeRows(IdRow))

/** New commits on the source branch: mergeability unknown again, and activity. The id if the head was `from`. */
export const moveHead = (sql: SqlClient.SqlClient, id: string, from: string, to: string, now: Date) =>
  sql`
    UPDATE pull_requests SET head_sha = ${to}, mergeable = NULL, mergeable_state = 'unknown',
      last_activity_at = ${now}, stale_warned_at = NULL, labels = array_remove(labels, ${STALE_LABEL}),
      updated_at = ${now}
    WHERE id = ${id} AND head_sha = ${from}
    RETURNING id`.pipe(decodeRows(IdRow))

/** A test merge's outcome, kept while the head is still `headSha`. */
export const recordTestMerge = (
  sql: SqlClient.SqlClient,
  id: string,
  headSha: string,
  result: { readonly mergeable: boolean; readonly conflicts: ReadonlyArray<string>; readonly baseSha: string }
) =>
  sql`
    UPDATE pull_requests SET mergeable = ${result.mergeable}, conflicts = ${JSON.stringify(result.conflicts)}::jsonb,
      base_sha = ${result.baseSha}
    WHERE id = ${id} AND head_sha = ${headSha}`

export const setMergeableState = (sql: SqlClient.SqlClient, id: string, state: MergeableState) =>
  sql`UPDATE pull_requests SET mergeable_state = ${state} WHERE id = ${id}`

/** Open pull requests from `branch`. */
export const openFromBranch = (sql: SqlClient.SqlClient, repoId: string, branch: string) =>
  sql`
    SELECT id FROM pull_requests WHERE repo_id = ${repoId} AND state IN ('open', 'draft') AND source_branch = ${branch}`
    .pipe(decodeRows(IdRow))

const ResetRow = Schema.Struct({ id: Schema.String, auto: Schema.Boolean })

/** The target `branch` moved: the mergeability of open pull requests into it is unknown again. */
export const resetMergeabilityInto = (sql: SqlClient.SqlClient, repoId: string, branch: string) =>
  sql`
    UPDATE pull_requests SET mergeable = NULL, mergeable_state = 'unknown'
    WHERE repo_id = ${repoId} AND state IN ('open', 'draft') AND target_branch = ${branch}
    RETURNING id, auto_merge IS NOT NULL AS auto`.pipe(decodeRows(ResetRow))

/** Open pull requests whose head is `sha`. */
export const openAtHead = (sql: SqlClient.SqlClient, repoId: string, sha: string) =>
  sql`
    SELECT id FROM pull_requests WHERE repo_id = ${repoId} AND head_sha = ${sha} AND state IN ('open', 'draft')`.pipe(
    decodeRows(IdRow)
  )

/** Open pull requests whose next stale step (warning or closing) is due by `horizon`. */
export const staleStepDue = (sql: SqlClient.SqlClient, horizon: Date) =>
  sql`
    SELECT p.id FROM pull_requests p JOIN ${repositoryStaleSettings(sql)} r ON r.id = p.repo_id
    WHERE p.state IN ('open', 'draft') AND r.stale_enabled
      AND CASE WHEN p.stale_warned_at IS NULL
        THEN p.last_activity_at + r.stale_warn_days * interval '1 day'
        ELSE p.last_activity_at + r.stale_close_days * interval '1 day' END <= ${horizon}`.pipe(decodeRows(IdRow))

/** A repository's pull requests, newest first: all, or those in `state`. */
export const pullRequestsOf = (sql: SqlClient.SqlClient, repoId: string, state: string | undefined) => {
  const filter = state === undefined || state === "all" ? sql.literal("") : sql`AND p.state = ${state}`
  return findPullRequests(sql, sql`WHERE p.repo_id = ${repoId} ${filter} ORDER BY p.number DESC`)
}
