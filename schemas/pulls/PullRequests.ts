import { Schema } from "effect"
import { BranchName } from "../git/Repositories.ts"
import { ErrorDetail } from "../platform/Errors.ts"

/**
 * Pull requests, reviews, comments, suggestions and merges (spec 001 "Pull request",
 * "Review", "Comment", "Merge request"; GUIDE §11). Events are in `PullRequestEvents.ts`.
 *
 * Wire choices where the spec is silent: `author`, `mergedBy` and reviewers are
 * `{id, username, name, email}`; `mergeableState` is `unknown` (computing), `dirty`
 * (conflicts), `draft`, `blocked` (a merge check fails or is pending), `clean`, or `closed`
 * / `merged` once the request is no longer open.
 */

export const PullRequestState = Schema.Literals(["draft", "open", "merged", "closed"])
export type PullRequestState = typeof PullRequestState.Type

export const MergeStrategy = Schema.Literals(["merge", "squash", "rebase"])
export type MergeStrategy = typeof MergeStrategy.Type

export const MergeableState = Schema.Literals(["unknown", "dirty", "draft", "blocked", "clean", "closed", "merged"])
export type MergeableState = typeof MergeableState.Type

export const Person = Schema.Struct({
  id: Schema.String,
  username: Schema.String,
  name: Schema.String,
  email: Schema.String
})
export type Person = typeof Person.Type

export const AutoMerge = Schema.Struct({
  strategy: MergeStrategy,
  commitMessage: Schema.NullOr(Schema.String),
  deleteBranch: Schema.Boolean,
  enabledBy: Schema.String
})
export type AutoMerge = typeof AutoMerge.Type

export const PullRequest = Schema.Struct({
  id: Schema.String,
  number: Schema.Int,
  title: Schema.String,
  body: Schema.String,
  state: PullRequestState,
  isDraft: Schema.Boolean,
  sourceBranch: Schema.String,
  targetBranch: Schema.String,
  baseSha: Schema.String,
  headSha: Schema.String,
  author: Person,
  mergeable: Schema.NullOr(Schema.Boolean),
  mergeableState: MergeableState,
  labels: Schema.Array(Schema.String),
  requestedReviewers: Schema.Array(Schema.String),
  autoMerge: Schema.NullOr(AutoMerge),
  mergedAt: Schema.NullOr(Schema.String),
  mergedBy: Schema.NullOr(Person),
  mergeCommitSha: Schema.NullOr(Schema.String),
  closedAt: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  updatedAt: Schema.String
})
export type PullRequest = typeof PullRequest.Type

export const PullRequestList = Schema.Struct({ pullRequests: Schema.Array(PullRequest), count: Schema.Int })
export type PullRequestList = typeof PullRequestList.Type

const Title = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(256))
const Body = Schema.String.check(Schema.isMaxLength(65536))

export const CreatePullRequest = Schema.Struct({
  title: Title,
  body: Schema.optionalKey(Body),
  sourceBranch: BranchName,
  targetBranch: Schema.optionalKey(BranchName),
  isDraft: Schema.optionalKey(Schema.Boolean)
}).annotate({
  // GitHub's body names the branches `head` and `base`: answer with Canopy's names.
  messageUnexpectedKey:
    "Unknown field; the branches are sourceBranch (GitHub's head) and targetBranch (GitHub's base, default the repository's default branch)"
})
export type CreatePullRequest = typeof CreatePullRequest.Type

export const UpdatePullRequest = Schema.Struct({
  title: Schema.optionalKey(Title),
  body: Schema.optionalKey(Body),
  isDraft: Schema.optionalKey(Schema.Boolean),
  state: Schema.optionalKey(Schema.Literals(["open", "closed"]))
})
export type UpdatePullRequest = typeof UpdatePullRequest.Type

export const ListPullRequestsQuery = {
  state: Schema.optional(Schema.Literals(["draft", "open", "merged", "closed", "all"]))
}

export const ChangedFile = Schema.Struct({
  path: Schema.String,
  previousPath: Schema.optionalKey(Schema.String),
  status: Schema.Literals(["added", "modified", "removed", "renamed"]),
  additions: Schema.Int,
  deletions: Schema.Int,
  patch: Schema.String
})
export type ChangedFile = typeof ChangedFile.Type
export const ChangedFiles = Schema.Struct({ files: Schema.Array(ChangedFile), count: Schema.Int })
export type ChangedFiles = typeof ChangedFiles.Type

// --- reviews -------------------------------------------------------------------------------

export const ReviewState = Schema.Literals(["pending", "approved", "changes_requested", "commented"])
export type ReviewState = typeof ReviewState.Type

export const Review = Schema.Struct({
  id: Schema.String,
  state: ReviewState,
  body: Schema.String,
  reviewer: Person,
  headSha: Schema.String,
  submittedAt: Schema.NullOr(Schema.String),
  dismissed: Schema.Boolean,
  dismissMessage: Schema.NullOr(Schema.String),
  createdAt: Schema.String
})
export type Review = typeof Review.Type
export const ReviewList = Schema.Struct({ reviews: Schema.Array(Review), count: Schema.Int })
export type ReviewList = typeof ReviewList.Type

export const CreateReview = Schema.Struct({
  state: ReviewState,
  body: Schema.optionalKey(Body)
})
export type CreateReview = typeof CreateReview.Type

export const DismissReview = Schema.Struct({ message: Schema.String.check(Schema.isMinLength(1)) })

const Username = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100))
export const ReviewRequest = Schema.Struct({
  reviewers: Schema.Array(Username).check(Schema.isMinLength(1), Schema.isMaxLength(50))
})
export type ReviewRequest = typeof ReviewRequest.Type
export const RequestedReviewers = Schema.Struct({ requestedReviewers: Schema.Array(Schema.String) })

// --- comments and suggestions ----------------------------------------------------------------

export const Suggestion = Schema.Struct({
  id: Schema.String,
  commentId: Schema.NullOr(Schema.String),
  path: Schema.String,
  startLine: Schema.Int,
  endLine: Schema.Int,
  originalLines: Schema.Array(Schema.String),
  /** null: an AI suggestion without exact new text (it cannot be applied). */
  replacement: Schema.NullOr(Schema.String),
  headSha: Schema.String,
  state: Schema.Literals(["open", "applied", "dismissed"]),
  appliedSha: Schema.NullOr(Schema.String)
})
export type Suggestion = typeof Suggestion.Type

export const Comment = Schema.Struct({
  id: Schema.String,
  body: Schema.String,
  /** `null` for comments Canopy writes itself (stale warnings, auto-merge failures). */
  author: Schema.NullOr(Person),
  path: Schema.NullOr(Schema.String),
  line: Schema.NullOr(Schema.Int),
  startLine: Schema.NullOr(Schema.Int),
  headSha: Schema.String,
  suggestion: Schema.NullOr(Suggestion),
  createdAt: Schema.String
})
export type Comment = typeof Comment.Type
export const CommentList = Schema.Struct({ comments: Schema.Array(Comment), count: Schema.Int })
export type CommentList = typeof CommentList.Type

const LineNumber = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
export const CreateComment = Schema.Struct({
  body: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(65536)),
  path: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(4096))),
  line: Schema.optionalKey(LineNumber),
  /** First line of a multi-line comment (and of its suggestion); `line` is the last. */
  startLine: Schema.optionalKey(LineNumber)
})
export type CreateComment = typeof CreateComment.Type

export const AppliedSuggestion = Schema.Struct({ applied: Schema.Boolean, sha: Schema.String })

// --- merges ----------------------------------------------------------------------------------

export const MergeRequest = Schema.Struct({
  strategy: Schema.optionalKey(MergeStrategy),
  commitMessage: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(65536))),
  deleteBranch: Schema.optionalKey(Schema.Boolean)
})
export type MergeRequest = typeof MergeRequest.Type

export const AutoMergeRequest = Schema.Struct({
  strategy: Schema.optionalKey(MergeStrategy),
  commitMessage: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(65536))),
  deleteBranch: Schema.optionalKey(Schema.Boolean)
})
export type AutoMergeRequest = typeof AutoMergeRequest.Type

export const MergeResult = Schema.Struct({
  merged: Schema.Boolean,
  sha: Schema.String,
  strategy: MergeStrategy,
  message: Schema.String
})
export type MergeResult = typeof MergeResult.Type

export const CheckName = Schema.Literals([
  "approvals",
  "changes_requested",
  "status_checks",
  "code_owners",
  "conflicts",
  "signed_commits",
  "linear_history",
  "ai_review"
])
export type CheckName = typeof CheckName.Type

export const MergeCheck = Schema.Struct({
  name: CheckName,
  status: Schema.Literals(["passed", "failed", "pending"]),
  detail: Schema.String
})
export type MergeCheck = typeof MergeCheck.Type

/** 409 when a configured merge check fails or is pending (GUIDE §11). */
export class MergeBlocked extends Schema.Error<MergeBlocked>("MergeBlocked")({
  error: Schema.tag("merge_blocked"),
  message: Schema.String,
  checks: Schema.Array(MergeCheck)
}, { httpApiStatus: 409 }) {}

/** 422 for a body that is well formed but does not fit the pull request (an inline line outside the diff). */
export class Unprocessable extends Schema.Error<Unprocessable>("Unprocessable")({
  error: Schema.tag("validation_error"),
  message: Schema.String,
  details: Schema.optional(Schema.Array(ErrorDetail))
}, { httpApiStatus: 422 }) {}

/** The repository setting `stalePullRequests` (GUIDE §11). */
export const StaleSettings = Schema.Struct({
  enabled: Schema.Boolean,
  warnAfterDays: Schema.Int,
  closeAfterDays: Schema.Int
})
export type StaleSettings = typeof StaleSettings.Type
