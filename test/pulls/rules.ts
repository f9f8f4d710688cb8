import { Context, Effect } from "effect"
import type { StatusState } from "../../schemas/protection/CommitStatuses.ts"
import type { RepoRecord } from "../../services/git/Repositories.ts"
import { BranchRules, type BranchRulesShape, type MergePolicy, NO_RULES } from "../../services/pulls/BranchRules.ts"

/**
 * A `BranchRules` for tests: the policy of each repository (by its organization's slug; the
 * tests make one repository per organization) is set by the test,
 * owners bypass nothing (so the checks bind everyone), bypasses are recorded.
 */
export const testRules = () => {
  const policies = new Map<string, MergePolicy>()
  const bypasses: Array<{ repo: string; ruleIds: ReadonlyArray<string> }> = []
  /** Commit statuses by sha, then context. */
  const statuses = new Map<string, Map<string, StatusState>>()
  const rules: BranchRulesShape = {
    mergePolicy: (repo: RepoRecord) =>
      Effect.sync(() => {
        const policy = policies.get(repo.orgSlug) ?? NO_RULES
        return { full: policy, forActor: policy }
      }),
    latestStatuses: (_repoId, sha) => Effect.sync(() => new Map(statuses.get(sha) ?? [])),
    unsignedCommits: () => Effect.succeed([]),
    recordBypass: (input) => Effect.sync(() => void bypasses.push({ repo: input.repo.orgSlug, ruleIds: input.ruleIds }))
  }
  return {
    set: (orgSlug: string, policy: Partial<MergePolicy>) =>
      policies.set(orgSlug, { ...NO_RULES, ruleIds: ["rule_test"], ...policy }),
    bypasses,
    setStatus: (sha: string, context: string, state: StatusState) => {
      const forSha = statuses.get(sha) ?? new Map<string, StatusState>()
      forSha.set(context, state)
      statuses.set(sha, forSha)
    },
    context: Context.make(BranchRules, rules) as Context.Context<never>
  }
}
