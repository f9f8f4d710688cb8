import { Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type * as Statement from "effect/sql/Statement"
import { type CommitStatus, StatusState } from "../../schemas/protection/CommitStatuses.ts"
import { decodeRows } from "../platform/Rows.ts"
import { userDirectory } from "../tenancy/Tenancy.ts"

/*
 * The `commit_statuses` table: its row, how the API presents it, and every statement on it.
 */

/** A reported status with its creator's username. */
const StatusRow = Schema.Struct({
  id: Schema.String,
  sha: Schema.String,
  state: StatusState,
  context: Schema.String,
  description: Schema.NullOr(Schema.String),
  target_url: Schema.NullOr(Schema.String),
  creator: Schema.NullOr(Schema.String),
  created_at: Schema.Date
})
type StatusRow = typeof StatusRow.Type

const LatestRow = Schema.Struct({ context: Schema.String, state: StatusState })

export const toStatus = (row: StatusRow): CommitStatus => ({
  id: row.id,
  sha: row.sha,
  state: row.state,
  context: row.context,
  description: row.description,
  targetUrl: row.target_url,
  creator: row.creator,
  createdAt: row.created_at.toISOString()
})

export interface NewCommitStatus {
  readonly id: string
  readonly repoId: string
  readonly sha: string
  readonly state: StatusState
  readonly context: string
  readonly description: string | null
  readonly targetUrl: string | null
  readonly creatorId: string | null
}

/**
 * Inserts a status; with `when`, only if it holds (to embed in a larger statement, e.g.
 * `WITH s AS (${insertCommitStatus(…)})`, whose other rows decide).
 */
export const insertCommitStatus = (
  sql: SqlClient.SqlClient,
  status: NewCommitStatus,
  when: Statement.Fragment = sql.literal("true")
) =>
  sql`
    INSERT INTO commit_statuses (id, repo_id, sha, state, context, description, target_url, creator_id)
    SELECT ${status.id}, ${status.repoId}, ${status.sha}, ${status.state}, ${status.context},
      ${status.description}, ${status.targetUrl}, ${status.creatorId}
    WHERE ${when}
    RETURNING 1`

/** Statuses with their creator by `rest` (`WHERE …`, `ORDER BY …`), decoded. */
export const findCommitStatuses = (sql: SqlClient.SqlClient, rest: Statement.Fragment) =>
  sql`
    SELECT s.id, s.sha, s.state, s.context, s.description, s.target_url, u.username AS creator, s.created_at
    FROM commit_statuses s LEFT JOIN ${userDirectory(sql)} u ON u.id = s.creator_id ${rest}`.pipe(
    decodeRows(StatusRow)
  )

export const commitStatusById = (sql: SqlClient.SqlClient, id: string) =>
  findCommitStatuses(sql, sql`WHERE s.id = ${id}`)

/** Every status of a commit, newest first. */
export const commitStatusesOf = (sql: SqlClient.SqlClient, repoId: string, sha: string) =>
  findCommitStatuses(sql, sql`WHERE s.repo_id = ${repoId} AND s.sha = ${sha} ORDER BY s.seq DESC`)

/** The latest state per context of a commit. */
export const latestStatuses = (sql: SqlClient.SqlClient, repoId: string, sha: string) =>
  sql`
    SELECT DISTINCT ON (context) context, state FROM commit_statuses
    WHERE repo_id = ${repoId} AND sha = ${sha} ORDER BY context, seq DESC`.pipe(decodeRows(LatestRow))
