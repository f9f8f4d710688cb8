import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type * as Statement from "effect/sql/Statement"
import type { CommitStatus, CommitStatusList, CreateCommitStatus } from "../../schemas/protection/CommitStatuses.ts"
import { CommitStatusEvent, type StatusState } from "../../schemas/protection/CommitStatuses.ts"
import { publish } from "../events/Events.ts"
import type { RepoRecord } from "../git/Repositories.ts"
import { makeId } from "../platform/Ids.ts"
import { inTransaction } from "../platform/Rows.ts"
import { commitStatusById, commitStatusesOf, insertCommitStatus, latestStatuses, toStatus } from "./CommitStatusRows.ts"

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
  when?: Statement.Fragment
) => {
  const id = makeId("status")
  const context = input.context ?? DEFAULT_CONTEXT
  return {
    id,
    statement: insertCommitStatus(sql, {
      id,
      repoId: repo.id,
      sha,
      state: input.state,
      context,
      description: input.description ?? null,
      targetUrl: input.targetUrl ?? null,
      creatorId
    }, when),
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

      const create = Effect.fn("CommitStatuses.create")(
        function*(repo: RepoRecord, sha: string, creatorId: string | null, input: CreateCommitStatus) {
          const report = statusReport(sql, repo, sha, creatorId, input)
          yield* inTransaction(
            sql,
            Effect.gen(function*() {
              yield* report.statement
              yield* publish(report.event)
            })
          )
          const [row] = yield* commitStatusById(sql, report.id).pipe(Effect.orDie)
          return toStatus(row)
        }
      )

      const list = Effect.fn("CommitStatuses.list")(function*(repo: RepoRecord, sha: string) {
        const rows = yield* commitStatusesOf(sql, repo.id, sha).pipe(Effect.orDie)
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
        latestStatuses(sql, repoId, sha).pipe(
          Effect.orDie,
          Effect.map((rows): ReadonlyMap<string, StatusState> => new Map(rows.map((row) => [row.context, row.state])))
        )

      return CommitStatuses.of({ create, list, latest })
    })
  )
}
