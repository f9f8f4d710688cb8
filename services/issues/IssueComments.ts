import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import {
  type IssueComment,
  IssueCommentedEvent,
  type IssueCommentList,
  type IssuePerson
} from "../../schemas/issues/RepositoryIssues.ts"
import type { Conflict, NotFound } from "../../schemas/platform/Errors.ts"
import { publish } from "../events/Events.ts"
import type { RepoRecord } from "../git/Repositories.ts"
import { inTransaction } from "../platform/Rows.ts"
import { insertIssueComment, issueComments, toComment } from "./IssueCommentRows.ts"
import { eventRepository, selectIssue, toIssue, touchIssue } from "./IssueRows.ts"
import { issueNotFound, refuseArchived } from "./RepositoryIssues.ts"

/**
 * Comments on repository issues, oldest first. A comment (closed issues take comments
 * too, as on GitHub) touches the issue's `updatedAt` and publishes `issue.commented` with
 * the issue and the comment, in its transaction.
 */
export class IssueComments extends Context.Service<IssueComments, {
  list(repo: RepoRecord, number: number): Effect.Effect<IssueCommentList, NotFound>
  create(
    repo: RepoRecord,
    number: number,
    author: IssuePerson,
    body: string
  ): Effect.Effect<IssueComment, NotFound | Conflict>
}>()("canopy/issues/IssueComments") {
  static readonly layer = Layer.effect(
    IssueComments,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const list = Effect.fn("IssueComments.list")(function*(repo: RepoRecord, number: number) {
        const issue = yield* selectIssue(repo.id, number, false).pipe(
          Effect.provideService(SqlClient.SqlClient, sql),
          Effect.orDie
        )
        if (issue === undefined) return yield* issueNotFound(number)
        const rows = yield* issueComments(sql, issue.id).pipe(Effect.orDie)
        return { comments: rows.map(toComment), count: rows.length }
      })

      const create = Effect.fn("IssueComments.create")(
        function*(repo: RepoRecord, number: number, author: IssuePerson, body: string) {
          yield* refuseArchived(repo)
          const transaction = Effect.gen(function*() {
            const touched = yield* touchIssue(sql, repo.id, number).pipe(Effect.orDie)
            if (touched === undefined) return yield* issueNotFound(number)
            const [row] = yield* insertIssueComment(sql, touched.id, author, body).pipe(Effect.orDie)
            const comment = toComment(row)
            yield* publish(IssueCommentedEvent.make(repo.orgId, {
              repository: eventRepository(repo),
              issue: toIssue(touched),
              sender: author,
              comment,
              timestamp: comment.createdAt
            })).pipe(Effect.orDie)
            return comment
          })
          return yield* inTransaction(sql, transaction)
        }
      )

      return IssueComments.of({ list, create })
    })
  )
}
