import { Context, Effect } from "effect"
import type { StatusState } from "../../schemas/protection/CommitStatuses.ts"
import type { RepoRecord } from "../git/Repositories.ts"

/**
 * The seam between pull request merges (services/pulls) and branch protection
 * (services/protection): the merge-check engine asks these questions, branch protection
 * answers them. The default answers "no rules", so pull requests work without protection.
 */

/** What the rules matching a target branch ask of a merge, combined (the strictest value wins). */
export interface MergePolicy {
  /** Ids of the rules that matched (empty: the branch is not protected). */
  readonly ruleIds: ReadonlyArray<string>
  readonly requiredApprovals: number
  readonly dismissStaleReviews: boolean
  readonly requireCodeOwnerReview: boolean
  /** Contexts whose latest status on the head must be `success`; empty: no status check. */
  readonly requiredStatusChecks: ReadonlyArray<string>
  readonly requireSignedCommits: boolean
  readonly requireLinearHistory: boolean
}

export const NO_RULES: MergePolicy = {
  ruleIds: [],
  requiredApprovals: 0,
  dismissStaleReviews: false,
  requireCodeOwnerReview: false,
  requiredStatusChecks: [],
  requireSignedCommits: false,
  requireLinearHistory: false
}

/** Who merges: the key's user and their organization role; `null` for the server (auto-merge). */
export interface MergeActor {
  readonly id: string
  readonly name: string
  readonly role: "owner" | "admin" | "member"
}

export interface BranchRulesShape {
  /**
   * `full`: every matching rule; `forActor`: the rules that still bind this actor (owners
   * and admins bypass all, a rule's `bypassUsers` bypass that rule; `null` actor bypasses
   * nothing). A merge blocked under `full` but allowed under `forActor` is a bypass.
   */
  mergePolicy(
    repo: RepoRecord,
    branch: string,
    actor: MergeActor | null
  ): Effect.Effect<{ readonly full: MergePolicy; readonly forActor: MergePolicy }>
  /** The latest status of each context reported for `sha`. */
  latestStatuses(repoId: string, sha: string): Effect.Effect<ReadonlyMap<string, StatusState>>
  /**
   * The commits among `shas` without a GPG signature that verifies against a key of a
   * user of the repository's organization. `gitDir`/`env` reach the objects.
   */
  unsignedCommits(input: {
    readonly repo: RepoRecord
    readonly gitDir: string
    readonly env: Readonly<Record<string, string>>
    readonly shas: ReadonlyArray<string>
  }): Effect.Effect<ReadonlyArray<string>>
  /** Writes the audit entry of a merge a rule would have refused (GUIDE §12 bypass). */
  recordBypass(input: {
    readonly repo: RepoRecord
    readonly branch: string
    readonly actor: MergeActor
    readonly action: "merge"
    readonly ruleIds: ReadonlyArray<string>
    readonly detail: string
  }): Effect.Effect<void>
}

export const BranchRules = Context.Reference<BranchRulesShape>("canopy/pulls/BranchRules", {
  defaultValue: () => ({
    mergePolicy: () => Effect.succeed({ full: NO_RULES, forActor: NO_RULES }),
    latestStatuses: () => Effect.succeed(new Map()),
    unsignedCommits: () => Effect.succeed([]),
    recordBypass: () => Effect.void
  })
})

/**
 * Set (`Effect.provideService(MergeInProgress, true)`) around the `RefUpdates.apply` of a
 * pull request merge: the push-side protection hook then lets the target's update through,
 * since the merge checks (`mergePolicy`) already governed it; `requirePullRequest` would
 * otherwise refuse it as a direct update.
 */
export const MergeInProgress = Context.Reference<boolean>("canopy/pulls/MergeInProgress", {
  defaultValue: () => false
})

/**
 * Status contexts the server's own merges (auto-merge, the AI's merge) wait for beyond the
 * rules, per repository: CI fills it with `ci/test` when CI is enabled (GUIDE §14), whatever
 * the plan. The default adds none.
 */
export const ServerMergeStatusChecks = Context.Reference<(repo: RepoRecord) => Effect.Effect<ReadonlyArray<string>>>(
  "canopy/pulls/ServerMergeStatusChecks",
  { defaultValue: () => () => Effect.succeed([]) }
)
