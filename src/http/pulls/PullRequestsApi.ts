import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { Conflict, NotFound, ValidationError } from "../../../schemas/platform/Errors.ts"
import {
  AppliedSuggestion,
  AutoMergeRequest,
  ChangedFiles,
  Comment,
  CommentList,
  CreateComment,
  CreatePullRequest,
  CreateReview,
  DismissReview,
  ListPullRequestsQuery,
  MergeBlocked,
  MergeRequest,
  MergeResult,
  PullRequest,
  PullRequestList,
  RequestedReviewers,
  Review,
  ReviewList,
  ReviewRequest,
  ReviewState,
  Unprocessable,
  UpdatePullRequest
} from "../../../schemas/pulls/PullRequests.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication, RequiredScope } from "../tenancy/Security.ts"

const repoParams = { org: Schema.String, repo: Schema.String }
const PullNumber = Schema.FiniteFromString.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(1))
const pullParams = { ...repoParams, number: PullNumber }
const reviewParams = { ...pullParams, reviewId: Schema.String }

const read = "code:read"
const write = "code:write"

/**
 * Pull requests (spec 001 "Pull requests", GUIDE §11) under
 * `/api/v1/code/repos/{org}/{repo}/pulls`: read with `code:read`, everything else with
 * `code:write`. `{org}` must be the key's organization; any other answers 404.
 */
export class PullRequestsApi extends HttpApiGroup.make("pullRequests").add(
  HttpApiEndpoint.get("list", "/:org/:repo/pulls", {
    params: repoParams,
    query: ListPullRequestsQuery,
    success: PullRequestList,
    error: NotFound
  }).annotate(RequiredScope, read).annotateMerge(
    docs("List pull requests", "Newest first, filtered by `state` (default: all). Scope `code:read`.")
  ),
  HttpApiEndpoint.post("create", "/:org/:repo/pulls", {
    params: repoParams,
    payload: CreatePullRequest,
    success: PullRequest.annotate({ httpApiStatus: 201 }),
    error: [NotFound, ValidationError, Conflict]
  }).annotate(RequiredScope, write).annotateMerge(
    docs(
      "Open a pull request",
      "From `sourceBranch` (must exist, else 400) into `targetBranch` (default: the repository's default branch); " +
        "`isDraft: true` opens a draft. The same open pair twice is a 409. Scope `code:write`."
    )
  ),
  HttpApiEndpoint.get("get", "/:org/:repo/pulls/:number", {
    params: pullParams,
    success: PullRequest,
    error: NotFound
  }).annotate(RequiredScope, read).annotateMerge(
    docs("Get a pull request", "With `mergeable` (null while computing) and `mergeableState`. Scope `code:read`.")
  ),
  HttpApiEndpoint.patch("update", "/:org/:repo/pulls/:number", {
    params: pullParams,
    payload: UpdatePullRequest,
    success: PullRequest,
    error: [NotFound, Conflict]
  }).annotate(RequiredScope, write).annotateMerge(
    docs("Edit a pull request", "`title`, `body`, `isDraft`, `state` open|closed (close, reopen). Scope `code:write`.")
  ),
  HttpApiEndpoint.get("files", "/:org/:repo/pulls/:number/files", {
    params: pullParams,
    success: ChangedFiles,
    error: NotFound
  }).annotate(RequiredScope, read).annotateMerge(
    docs("Changed files", "Each changed file against the merge base, with its patch. Scope `code:read`.")
  ),
  HttpApiEndpoint.get("diff", "/:org/:repo/pulls/:number/diff", {
    params: pullParams,
    success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/x-diff" })),
    error: NotFound
  }).annotate(RequiredScope, read).annotateMerge(
    docs("Diff", "The unified diff against the merge base (`text/x-diff`). Scope `code:read`.")
  ),
  HttpApiEndpoint.post("merge", "/:org/:repo/pulls/:number/merge", {
    params: pullParams,
    payload: MergeRequest,
    success: MergeResult,
    error: [NotFound, Conflict, MergeBlocked]
  }).annotate(RequiredScope, write).annotateMerge(
    docs(
      "Merge",
      "`strategy` merge|squash|rebase (default merge), `commitMessage`, `deleteBranch`. A failing or pending check " +
        "answers 409 `merge_blocked` listing every configured check; a merged or closed request 409 `conflict`. " +
        "Scope `code:write`."
    )
  ),
  HttpApiEndpoint.put("enableAutoMerge", "/:org/:repo/pulls/:number/auto-merge", {
    params: pullParams,
    payload: AutoMergeRequest,
    success: PullRequest,
    error: [NotFound, Conflict]
  }).annotate(RequiredScope, write).annotateMerge(
    docs("Enable auto-merge", "Merges with `strategy` as soon as every check passes. Scope `code:write`.")
  ),
  HttpApiEndpoint.delete("disableAutoMerge", "/:org/:repo/pulls/:number/auto-merge", {
    params: pullParams,
    success: PullRequest,
    error: NotFound
  }).annotate(RequiredScope, write).annotateMerge(docs("Disable auto-merge", "Scope `code:write`.")),
  HttpApiEndpoint.get("reviews", "/:org/:repo/pulls/:number/reviews", {
    params: pullParams,
    success: ReviewList,
    error: NotFound
  }).annotate(RequiredScope, read).annotateMerge(docs("List reviews", "Oldest first. Scope `code:read`.")),
  HttpApiEndpoint.post("createReview", "/:org/:repo/pulls/:number/reviews", {
    params: pullParams,
    payload: CreateReview,
    success: Review.annotate({ httpApiStatus: 201 }),
    error: [NotFound, Conflict]
  }).annotate(RequiredScope, write).annotateMerge(
    docs(
      "Review",
      "`approved`, `changes_requested`, `commented`, or `pending` (kept as a draft until submitted). Scope `code:write`."
    )
  ),
  HttpApiEndpoint.post("submitReview", "/:org/:repo/pulls/:number/reviews/:reviewId/submit", {
    params: reviewParams,
    payload: Schema.Struct({
      state: Schema.optionalKey(ReviewState),
      body: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(65536)))
    }),
    success: Review,
    error: [NotFound, Conflict, ValidationError]
  }).annotate(RequiredScope, write).annotateMerge(
    docs("Submit a pending review", "As `state` (default `commented`); from then on it counts. Scope `code:write`.")
  ),
  HttpApiEndpoint.post("dismissReview", "/:org/:repo/pulls/:number/reviews/:reviewId/dismiss", {
    params: reviewParams,
    payload: DismissReview,
    success: Review,
    error: [NotFound, Conflict]
  }).annotate(RequiredScope, write).annotateMerge(
    docs("Dismiss a review", "A dismissed review no longer counts nor blocks. Scope `code:write`.")
  ),
  HttpApiEndpoint.post("requestReviewers", "/:org/:repo/pulls/:number/requested_reviewers", {
    params: pullParams,
    payload: ReviewRequest,
    success: RequestedReviewers.annotate({ httpApiStatus: 201 }),
    error: [NotFound, ValidationError]
  }).annotate(RequiredScope, write).annotateMerge(
    docs("Request reviewers", "Members of the organization, by username. Scope `code:write`.")
  ),
  HttpApiEndpoint.delete("removeReviewers", "/:org/:repo/pulls/:number/requested_reviewers", {
    params: pullParams,
    payload: ReviewRequest,
    success: RequestedReviewers,
    error: NotFound
  }).annotate(RequiredScope, write).annotateMerge(docs("Remove review requests", "Scope `code:write`.")),
  HttpApiEndpoint.get("comments", "/:org/:repo/pulls/:number/comments", {
    params: pullParams,
    success: CommentList,
    error: NotFound
  }).annotate(RequiredScope, read).annotateMerge(docs("List comments", "Oldest first. Scope `code:read`.")),
  HttpApiEndpoint.post("createComment", "/:org/:repo/pulls/:number/comments", {
    params: pullParams,
    payload: CreateComment,
    success: Comment.annotate({ httpApiStatus: 201 }),
    error: [NotFound, ValidationError, Unprocessable, Conflict]
  }).annotate(RequiredScope, write).annotateMerge(
    docs(
      "Comment",
      "General, or inline with `path` and `line` (a new-side line shown in the diff, else 422). A ```suggestion " +
        "block in an inline comment records a suggestion. Scope `code:write`."
    )
  ),
  HttpApiEndpoint.post("applySuggestion", "/:org/:repo/pulls/:number/suggestions/:suggestionId/apply", {
    params: { ...pullParams, suggestionId: Schema.String },
    success: AppliedSuggestion,
    error: [NotFound, Conflict]
  }).annotate(RequiredScope, write).annotateMerge(
    docs(
      "Apply a suggestion",
      "Commits it to the source branch (author: the suggester). 409 when outdated, not open, or a no-op. " +
        "Scope `code:write`."
    )
  )
).prefix("/api/v1/code/repos").middleware(Authentication) {}
