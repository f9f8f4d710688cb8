import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { StatusState } from "../../schemas/protection/CommitStatuses.ts"
import type { MergeCheck, MergeStrategy } from "../../schemas/pulls/PullRequests.ts"
import { AI_REVIEW_CONTEXT } from "./AiReviewGate.ts"
import type { MergePolicy } from "./BranchRules.ts"
import { codeOwnerRequests, latestVerdicts } from "./ReviewRows.ts"

/**
 * The merge-check engine (GUIDE §11): every check a target branch's rules configure, with
 * `changes_requested` and `conflicts` always present. Pure: the inputs are gathered by
 * `gatherReviews` and the merge path; branch protection only fills the `MergePolicy`.
 */

/** A reviewer's standing review: their latest submitted, undismissed approval or change request. */
export interface StandingReview {
  readonly reviewerId: string
  readonly username: string
  readonly state: "approved" | "changes_requested"
  readonly headSha: string
}

export interface CheckInputs {
  readonly policy: MergePolicy
  readonly authorId: string
  readonly headSha: string
  readonly reviews: ReadonlyArray<StandingReview>
  /** `null` while unknown (not computed yet). */
  readonly mergeable: boolean | null
  readonly conflicts: ReadonlyArray<string>
  readonly statuses: ReadonlyMap<string, StatusState>
  /** Commits without a verified signature; only read when the policy requires signatures. */
  readonly unsignedCommits: ReadonlyArray<string>
  /** Owners (user ids) of the changed files, from CODEOWNERS. */
  readonly codeOwners: ReadonlySet<string>
  /** The strategy of the merge being attempted; undefined when only evaluating. */
  readonly strategy: MergeStrategy | undefined
  /** The merge waits for the `ai/review` status even without a rule requiring it (auto-merge, AI enabled). */
  readonly aiReviewRequired?: boolean | undefined
}

const check = (name: MergeCheck["name"], status: MergeCheck["status"], detail: string): MergeCheck => ({
  name,
  status,
  detail
})

const list = (items: ReadonlyArray<string>, max = 10) =>
  items.length <= max ? items.join(", ") : `${items.slice(0, max).join(", ")} and ${items.length - max} more`

export const evaluateChecks = (inputs: CheckInputs): ReadonlyArray<MergeCheck> => {
  const { policy } = inputs
  const checks: Array<MergeCheck> = []
  // The author's own approval never counts; a stale one neither when the rules say so.
  const approvals = inputs.reviews.filter((review) =>
    review.state === "approved" && review.reviewerId !== inputs.authorId &&
    (!policy.dismissStaleReviews || review.headSha === inputs.headSha)
  )
  if (policy.requiredApprovals > 0) {
    const count = approvals.length
    checks.push(check(
      "approvals",
      count >= policy.requiredApprovals ? "passed" : "failed",
      `${count} of ${policy.requiredApprovals} required approvals`
    ))
  }
  const blocking = inputs.reviews.filter((review) => review.state === "changes_requested")
  checks.push(
    blocking.length === 0
      ? check("changes_requested", "passed", "No outstanding change requests")
      : check("changes_requested", "failed", `Changes requested by ${list(blocking.map((r) => r.username))}`)
  )
  // `ai/review` is reported as its own check, `ai_review` (GUIDE §15).
  const requiredContexts = policy.requiredStatusChecks.filter((context) => context !== AI_REVIEW_CONTEXT)
  if (requiredContexts.length > 0) {
    const states = requiredContexts.map((context) => [context, inputs.statuses.get(context)] as const)
    const failing = states.filter(([, state]) => state === "failure" || state === "error")
    const waiting = states.filter(([, state]) => state === undefined || state === "pending")
    checks.push(
      failing.length > 0
        ? check(
          "status_checks",
          "failed",
          `Failing: ${list(failing.map(([context, state]) => `${context} (${state})`))}`
        )
        : waiting.length > 0
        ? check("status_checks", "pending", `Waiting for ${list(waiting.map(([context]) => context))}`)
        : check("status_checks", "passed", `All ${states.length} required status checks succeeded`)
    )
  }
  if (inputs.aiReviewRequired === true || policy.requiredStatusChecks.includes(AI_REVIEW_CONTEXT)) {
    const state = inputs.statuses.get(AI_REVIEW_CONTEXT)
    checks.push(
      state === "success"
        ? check("ai_review", "passed", "The AI review approves")
        : state === "failure"
        ? check("ai_review", "failed", "The AI review found problems that need work")
        : state === "error"
        ? check("ai_review", "failed", "The AI review failed")
        : check("ai_review", "pending", "Waiting for the AI review")
    )
  }
  if (policy.requireCodeOwnerReview) {
    const owners = [...inputs.codeOwners].filter((owner) => owner !== inputs.authorId)
    const ownerApproved = approvals.some((review) => inputs.codeOwners.has(review.reviewerId))
    checks.push(
      owners.length === 0 && inputs.codeOwners.size === 0
        ? check("code_owners", "passed", "No code owners for the changed files")
        : ownerApproved
        ? check("code_owners", "passed", "A code owner approved")
        : check("code_owners", "failed", "Waiting for a code owner's approval")
    )
  }
  checks.push(
    inputs.mergeable === null
      ? check("conflicts", "pending", "Mergeability is being computed")
      : inputs.mergeable
      ? check("conflicts", "passed", "No conflicts with the target branch")
      : check("conflicts", "failed", `Conflicts in ${list(inputs.conflicts)}`)
  )
  if (policy.requireSignedCommits) {
    checks.push(
      inputs.unsignedCommits.length === 0
        ? check("signed_commits", "passed", "Every commit carries a verified signature")
        : check("signed_commits", "failed", `Unsigned or unverified commits: ${list(inputs.unsignedCommits)}`)
    )
  }
  if (policy.requireLinearHistory) {
    checks.push(
      inputs.strategy === "merge"
        ? check("linear_history", "failed", "The target branch requires a linear history: use squash or rebase")
        : check("linear_history", "passed", "The merge keeps the history linear")
    )
  }
  return checks
}

export const allPassed = (checks: ReadonlyArray<MergeCheck>) => checks.every((c) => c.status === "passed")

/**
 * The standing review of every reviewer (see `StandingReview`): comments do not change
 * it; a dismissed latest review counts for nothing (an older one does not come back).
 */
export const gatherReviews = (prId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* latestVerdicts(sql, prId).pipe(Effect.orDie)
    return rows.filter((row) => !row.dismissed).map(({ dismissed: _, ...review }): StandingReview => review)
  })

/** Owners of the changed files: the users requested as code owners. */
export const gatherCodeOwners = (prId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return new Set(yield* codeOwnerRequests(sql, prId).pipe(Effect.orDie))
  })
