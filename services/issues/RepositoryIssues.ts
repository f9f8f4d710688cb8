import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import {
  type CreateRepositoryIssue,
  IssueOpenedEvent,
  type IssuePerson,
  IssueUpdatedEvent,
  type RepositoryIssue,
  type RepositoryIssueList,
  type UpdateRepositoryIssue
} from "../../schemas/issues/RepositoryIssues.ts"
import { Conflict, NotFound } from "../../schemas/platform/Errors.ts"
import { publish } from "../events/Events.ts"
import { refuseArchived, type RepoRecord } from "../git/Repositories.ts"
import { nextNumber } from "../git/RepositoryNumbers.ts"
import { makeId } from "../platform/Ids.ts"
import { inTransaction } from "../platform/Rows.ts"
import {
  cleanLabels,
  closeIssueRow,
  countIssues,
  editIssue,
  eventRepository,
  insertIssue,
  listIssues,
  selectIssue,
  toIssue
} from "./IssueRows.ts"

export interface ListIssuesOptions {
  readonly state?: "open" | "closed" | "all" | undefined
  readonly limit?: number | undefined
  readonly page?: number | undefined
}

/** A number that names no issue of the repository (a pull request's number included). */
export const issueNotFound = (number: number) => new NotFound({ message: `Issue #${number} not found` })

/** Archived repositories are read-only, issues included (as on GitHub). */
export { refuseArchived }

/**
 * Repository issues (GUIDE §11). Callers resolve the repository first (another
 * organization's is a 404 there). Each change publishes its `issue.*` event in the
 * transaction that makes it: `issue.opened` on creation, `issue.closed` when closed,
 * `issue.updated` (with the previous values in `changes`) for title, body, labels and
 * reopening. A PATCH that changes nothing publishes nothing.
 */
export class RepositoryIssues extends Context.Service<RepositoryIssues, {
  create(
    repo: RepoRecord,
    author: IssuePerson,
    input: CreateRepositoryIssue
  ): Effect.Effect<RepositoryIssue, Conflict>
  list(repo: RepoRecord, options: ListIssuesOptions): Effect.Effect<RepositoryIssueList>
  get(repo: RepoRecord, number: number): Effect.Effect<RepositoryIssue, NotFound>
  update(
    repo: RepoRecord,
    number: number,
    actor: IssuePerson,
    patch: UpdateRepositoryIssue
  ): Effect.Effect<RepositoryIssue, NotFound | Conflict>
}>()("canopy/issues/RepositoryIssues") {
  static readonly layer = Layer.effect(
    RepositoryIssues,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const inSql = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
        Effect.provideService(effect, SqlClient.SqlClient, sql)

      const create = Effect.fn("RepositoryIssues.create")(
        function*(repo: RepoRecord, author: IssuePerson, input: CreateRepositoryIssue) {
          yield* refuseArchived(repo)
          const labels = cleanLabels(input.labels ?? [])
          return yield* inTransaction(
            sql,
            Effect.gen(function*() {
              const number = yield* nextNumber(repo.id)
              const row = yield* insertIssue(sql, {
                id: makeId("iss"),
                repoId: repo.id,
                number,
                title: input.title.trim(),
                body: input.body ?? "",
                labels,
                author
              })
              const issue = toIssue(row)
              yield* publish(IssueOpenedEvent.make(repo.orgId, {
                repository: eventRepository(repo),
                issue,
                sender: author,
                timestamp: issue.createdAt
              }))
              return issue
            })
          )
        }
      )

      const list = Effect.fn("RepositoryIssues.list")(function*(repo: RepoRecord, options: ListIssuesOptions) {
        const state = options.state ?? "open"
        const limit = options.limit ?? 30
        const offset = ((options.page ?? 1) - 1) * limit
        const [rows, count] = yield* Effect.all([
          listIssues(sql, repo.id, { state, limit, offset }),
          countIssues(sql, repo.id, state)
        ], { concurrency: 2 }).pipe(Effect.orDie)
        return { issues: rows.map(toIssue), count }
      })

      const get = Effect.fn("RepositoryIssues.get")(function*(repo: RepoRecord, number: number) {
        const row = yield* inSql(selectIssue(repo.id, number, false)).pipe(Effect.orDie)
        if (row === undefined) return yield* issueNotFound(number)
        return toIssue(row)
      })

      const update = Effect.fn("RepositoryIssues.update")(
        function*(repo: RepoRecord, number: number, actor: IssuePerson, patch: UpdateRepositoryIssue) {
          yield* refuseArchived(repo)
          const transaction = Effect.gen(function*() {
            const row = yield* selectIssue(repo.id, number, true).pipe(Effect.orDie)
            if (row === undefined) return yield* issueNotFound(number)
            const before = toIssue(row)
            const title = patch.title?.trim() ?? before.title
            const body = patch.body ?? before.body
            const labels = patch.labels === undefined ? before.labels : cleanLabels(patch.labels)
            const changes: Record<string, { from: unknown }> = {}
            if (title !== before.title) changes.title = { from: before.title }
            if (body !== before.body) changes.body = { from: before.body }
            if (JSON.stringify(labels) !== JSON.stringify(before.labels)) changes.labels = { from: before.labels }
            const closing = patch.state === "closed" && before.state === "open"
            const reopening = patch.state === "open" && before.state === "closed"
            if (reopening) changes.state = { from: "closed" }
            if (Object.keys(changes).length === 0 && !closing) return before

            let issue = before
            if (Object.keys(changes).length > 0) {
              const updated = yield* editIssue(sql, row.id, { title, body, labels, reopen: reopening }).pipe(
                Effect.orDie
              )
              issue = toIssue(updated)
            }
            if (closing) {
              issue = yield* closeIssueRow({ repo, issueId: row.id, actor, pullRequest: null }).pipe(Effect.orDie)
            }
            if (Object.keys(changes).length > 0) {
              yield* publish(IssueUpdatedEvent.make(repo.orgId, {
                repository: eventRepository(repo),
                issue,
                sender: actor,
                changes,
                timestamp: issue.updatedAt
              })).pipe(Effect.orDie)
            }
            return issue
          })
          return yield* inTransaction(sql, transaction)
        }
      )

      return RepositoryIssues.of({ create, list, get, update })
    })
  )
}
