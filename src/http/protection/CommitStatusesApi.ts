import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { NotFound } from "../../../schemas/platform/Errors.ts"
import {
  CommitSha,
  CommitStatus,
  CommitStatusList,
  CreateCommitStatus
} from "../../../schemas/protection/CommitStatuses.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication, RequiredScope } from "../tenancy/Security.ts"

const shaParams = { org: Schema.String, repo: Schema.String, sha: CommitSha }

/** Commit statuses (GUIDE §12, GitHub's API): report with `code:write`, read with `code:read`. */
export class CommitStatusesApi extends HttpApiGroup.make("commitStatuses").add(
  HttpApiEndpoint.post("create", "/statuses/:sha", {
    params: shaParams,
    payload: CreateCommitStatus,
    success: CommitStatus.annotate({ httpApiStatus: 201 }),
    error: NotFound
  }).annotate(RequiredScope, "code:write").annotateMerge(
    docs(
      "Report a commit status",
      "`state` is `pending`, `success`, `failure` or `error` for `context` (default `default`); the latest per " +
        "context counts for required status checks, and open pull requests with this head re-evaluate. " +
        "Scope `code:write`."
    )
  ),
  HttpApiEndpoint.get("list", "/commits/:sha/statuses", {
    params: shaParams,
    success: CommitStatusList,
    error: NotFound
  }).annotate(RequiredScope, "code:read").annotateMerge(
    docs(
      "List a commit's statuses",
      "Every status reported for the commit, newest first, and the combined `state` of the latest per context. " +
        "Scope `code:read`."
    )
  )
).prefix("/api/v1/code/repos/:org/:repo").middleware(Authentication) {}
