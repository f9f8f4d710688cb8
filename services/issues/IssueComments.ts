import { Context, Effect, Layer, Schema } from "effect"
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
import { makeId } from "../platform/Ids.ts"
import { decodeRows } from "../platform/Rows.ts"
import { eventRepository, selectIssue, toIssue, touchIssue } from "./IssueRows.ts"
import { issueNotFound, refuseArchived } from "./RepositoryIssues.ts"

/** A stored comment (`repo_issue_comments`, whose statements are all in this service). */
const CommentRow = Schema.Struct({
  id: Schema.String,
  body: Schema.String,
  author_id: Schema.String,
  author_name: Schema.String,
  created_at: Schema.Date,
  updated_at: Schema.Date
})
type CommentRow = typeof CommentRow.Type

const toComment = (row: CommentRow): IssueComment => ({
  id: row.id,
  body: row.body,
  author: { id: row.author_id, name: row.author_name },
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString()
})

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
        const rows = yield* sql`
          SELECT id, body, author_id, author_name, created_at, updated_at FROM repo_issue_comments
          WHERE issue_id = ${issue.id} ORDER BY created_at, id`.pipe(decodeRows(CommentRow), Effect.orDie)
        return { comments: rows.map(toComment), count: rows.length }
      })

      const create = Effect.fn("IssueComments.create")(
        function*(repo: RepoRecord, number: number, author: IssuePerson, body: string) {
          yield* refuseArchived(repo)
          const transaction = Effect.gen(function*() {
            const touched = yield* touchIssue(sql, repo.id, number).pipe(Effect.orDie)
            if (touched === undefined) return yield* issueNotFound(number)
            const [row] = yield* sql`
              INSERT INTO repo_issue_comments (id, issue_id, author_id, author_name, body)
              VALUES (${makeId("issuecomment")}, ${touched.id}, ${author.id}, ${author.name}, ${body})
              RETURNING id, body, author_id, author_name, created_at, updated_at`.pipe(
              decodeRows(CommentRow),
              Effect.orDie
            )
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
          return yield* sql.withTransaction(transaction).pipe(
            Effect.catchTag("SqlError", Effect.die),
            Effect.provideService(SqlClient.SqlClient, sql)
          )
        }
      )

      return IssueComments.of({ list, create })
    })
  )
}
