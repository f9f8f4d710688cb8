import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import {
  CreateIssueComment,
  CreateRepositoryIssue,
  IssueComment,
  IssueCommentList,
  ListRepositoryIssuesQuery,
  RepositoryIssue,
  RepositoryIssueList,
  UpdateRepositoryIssue
} from "../../../schemas/issues/RepositoryIssues.ts"
import { Conflict, NotFound } from "../../../schemas/platform/Errors.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication, RequiredScope } from "../tenancy/Security.ts"

const repoParams = { org: Schema.String, repo: Schema.String }
const issueParams = { ...repoParams, number: Schema.Int.check(Schema.isGreaterThan(0)) }

/**
 * Repository issues (GUIDE §11): read with `code:read`, open, change and comment with
 * `code:write`. `{org}` must be the key's organization; any other answers 404, as does a
 * number that names no issue (a pull request's number included).
 */
export class RepositoryIssuesApi extends HttpApiGroup.make("repositoryIssues").add(
  HttpApiEndpoint.get("list", "/:org/:repo/issues", {
    params: repoParams,
    query: ListRepositoryIssuesQuery,
    success: RepositoryIssueList,
    error: NotFound
  }).annotate(RequiredScope, "code:read").annotateMerge(
    docs(
      "List issues",
      "Issues by `state` (`open` by default, `closed`, `all`), newest first, `limit` per `page`. Scope `code:read`."
    )
  ),
  HttpApiEndpoint.post("create", "/:org/:repo/issues", {
    params: repoParams,
    payload: CreateRepositoryIssue,
    success: RepositoryIssue.annotate({ httpApiStatus: 201 }),
    error: [NotFound, Conflict]
  }).annotate(RequiredScope, "code:write").annotateMerge(
    docs(
      "Open an issue",
      "A new issue numbered from the sequence shared with pull requests; the author is the key's user. " +
        "Publishes `issue.opened`. Scope `code:write`."
    )
  ),
  HttpApiEndpoint.get("get", "/:org/:repo/issues/:number", {
    params: issueParams,
    success: RepositoryIssue,
    error: NotFound
  }).annotate(RequiredScope, "code:read").annotateMerge(
    docs("Get an issue", "One issue by number. Scope `code:read`.")
  ),
  HttpApiEndpoint.patch("update", "/:org/:repo/issues/:number", {
    params: issueParams,
    payload: UpdateRepositoryIssue,
    success: RepositoryIssue,
    error: [NotFound, Conflict]
  }).annotate(RequiredScope, "code:write").annotateMerge(
    docs(
      "Update an issue",
      "Title, body, labels, or `state` (close, reopen). Publishes `issue.closed` on close and `issue.updated` " +
        "for other changes. Scope `code:write`."
    )
  ),
  HttpApiEndpoint.get("comments", "/:org/:repo/issues/:number/comments", {
    params: issueParams,
    success: IssueCommentList,
    error: NotFound
  }).annotate(RequiredScope, "code:read").annotateMerge(
    docs("List issue comments", "The issue's comments, oldest first. Scope `code:read`.")
  ),
  HttpApiEndpoint.post("comment", "/:org/:repo/issues/:number/comments", {
    params: issueParams,
    payload: CreateIssueComment,
    success: IssueComment.annotate({ httpApiStatus: 201 }),
    error: [NotFound, Conflict]
  }).annotate(RequiredScope, "code:write").annotateMerge(
    docs("Comment on an issue", "Adds a comment; publishes `issue.commented`. Scope `code:write`.")
  )
).prefix("/api/v1/code/repos").middleware(Authentication) {}
