import { Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { IssueComment, IssuePerson } from "../../schemas/issues/RepositoryIssues.ts"
import { makeId } from "../platform/Ids.ts"
import { decodeRows } from "../platform/Rows.ts"

/*
 * The `repo_issue_comments` table: its rows and every statement on it (`IssueComments` is
 * its one owner). Each takes the caller's `SqlClient`, so it runs in the caller's transaction.
 */

/** A stored comment. */
export const CommentRow = Schema.Struct({
  id: Schema.String,
  body: Schema.String,
  author_id: Schema.String,
  author_name: Schema.String,
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type CommentRow = typeof CommentRow.Type

export const toComment = (row: CommentRow): IssueComment => ({
  id: row.id,
  body: row.body,
  author: { id: row.author_id, name: row.author_name },
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString()
})

const commentColumns = "id, body, author_id, author_name, created_at, updated_at"

/** The issue's comments, oldest first. */
export const issueComments = (sql: SqlClient.SqlClient, issueId: string) =>
  sql`
    SELECT ${sql.literal(commentColumns)} FROM repo_issue_comments
    WHERE issue_id = ${issueId} ORDER BY created_at, id`.pipe(decodeRows(CommentRow))

export const insertIssueComment = (sql: SqlClient.SqlClient, issueId: string, author: IssuePerson, body: string) =>
  sql`
    INSERT INTO repo_issue_comments (id, issue_id, author_id, author_name, body)
    VALUES (${makeId("issuecomment")}, ${issueId}, ${author.id}, ${author.name}, ${body})
    RETURNING ${sql.literal(commentColumns)}`.pipe(decodeRows(CommentRow))
