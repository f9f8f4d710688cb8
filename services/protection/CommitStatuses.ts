import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type * as Statement from "effect/sql/Statement"
import type { CommitStatus, CommitStatusList, CreateCommitStatus } from "../../schemas/protection/CommitStatuses.ts"
import { CommitStatusEvent, StatusState } from "../../schemas/protection/CommitStatuses.ts"
import { publish } from "../events/Events.ts"
import type { RepoRecord } from "../git/Repositories.ts"
import { makeId } from "../platform/Ids.ts"
import { decodeRows } from "../platform/Rows.ts"

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

const toStatus = (row: StatusRow): CommitStatus => ({
  id: row.id,
  sha: row.sha,
  state: row.state,
  context: row.context,
  description: row.description,
  targetUrl: row.target_url,
  creator: row.creator,
  createdAt: row.created_at.toISOString()
})

/** GitHub's combined state: any failure or error fails, any pending is pending, else success. */
export const combinedState = (states: Iterable<StatusState>): StatusState => {
  let combined: StatusState = "success"
  for (const state of states) {
    if (state === "failure" || state === "error") return "failure"
    if (state === "pending") combined = "pending"
  }
  return combined
}

/** The context of a status reported without one (as on GitHub). */
const DEFAULT_CONTEXT = "default"

/**
 * A status report as a statement to embed in a larger one (`WITH s AS (${report.statement})`,
 * with `report.event` appended by the caller's `appendStatement` in the same statement), for
 * a reporter whose own rows change with the report (an AI review's claim and completion);
 * inserted only when `when` (default true) holds.
 */
export const statusReport = (
  sql: SqlClient.SqlClient,
  repo: { readonly id: string; readonly orgId: string },
  sha: string,
  creatorId: string | null,
  input: CreateCommitStatus,
  when: Statement.Fragment = sql.literal("true")
) => {
  const id = makeId("status")
  const context = input.context ?? DEFAULT_CONTEXT
  return {
    id,
    statement: sql`
      INSERT INTO commit_statuses (id, repo_id, sha, state, context, description, target_url, creator_id)
      SELECT ${id}, ${repo.id}, ${sha}, ${input.state}, ${context}, ${input.description ?? null},
        ${input.targetUrl ?? null}, ${creatorId}
      WHERE ${when}
      RETURNING 1`,
    event: CommitStatusEvent.make(repo.orgId, { repoId: repo.id, sha, context, state: input.state })
  }
}

/**
 * Commit statuses (GUIDE §12, GitHub's API): any CI reports `pending`, `success`,
 * `failure` or `error` per context; the latest per context is what merge checks read. Each
 * report publishes `commit_status` in its transaction, so pull requests with that head
 * re-evaluate (and auto-merge).
 */
export class CommitStatuses extends Context.Service<CommitStatuses, {
  create(
    repo: RepoRecord,
    sha: string,
    creatorId: string | null,
    input: CreateCommitStatus
  ): Effect.Effect<CommitStatus>
  list(repo: RepoRecord, sha: string): Effect.Effect<CommitStatusList>
  latest(repoId: string, sha: string): Effect.Effect<ReadonlyMap<string, StatusState>>
}>()("canopy/protection/CommitStatuses") {
  static readonly layer = Layer.effect(
    CommitStatuses,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const select = sql`
        SELECT s.id, s.sha, s.state, s.context, s.description, s.target_url, u.username AS creator, s.created_at
        FROM commit_statuses s LEFT JOIN users u ON u.id = s.creator_id`

      const create = Effect.fn("CommitStatuses.create")(
        function*(repo: RepoRecord, sha: string, creatorId: string | null, input: CreateCommitStatus) {
          const report = statusReport(sql, repo, sha, creatorId, input)
          yield* sql.withTransaction(Effect.gen(function*() {
            yield* report.statement
            yield* publish(report.event)
          })).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie)
          const [row] = yield* sql`${select} WHERE s.id = ${report.id}`.pipe(decodeRows(StatusRow), Effect.orDie)
          return toStatus(row)
        }
      )

      const list = Effect.fn("CommitStatuses.list")(function*(repo: RepoRecord, sha: string) {
        const rows = yield* sql`
          ${select} WHERE s.repo_id = ${repo.id} AND s.sha = ${sha} ORDER BY s.seq DESC`.pipe(
          decodeRows(StatusRow),
          Effect.orDie
        )
        const latest = new Map<string, StatusState>()
        for (const row of rows) if (!latest.has(row.context)) latest.set(row.context, row.state)
        return {
          sha,
          state: rows.length === 0 ? "pending" as const : combinedState(latest.values()),
          statuses: rows.map(toStatus),
          count: rows.length
        }
      })

      const latest = (repoId: string, sha: string) =>
        sql`
          SELECT DISTINCT ON (context) context, state FROM commit_statuses
          WHERE repo_id = ${repoId} AND sha = ${sha} ORDER BY context, seq DESC`.pipe(
          decodeRows(LatestRow),
          Effect.orDie,
          Effect.map((rows): ReadonlyMap<string, StatusState> => new Map(rows.map((row) => [row.context, row.state])))
        )

      return CommitStatuses.of({ create, list, latest })
    })
  )
}
