import type { ProtectionOption, RuleOptions } from "../../schemas/protection/BranchProtection.ts"
import type { Plan } from "../../schemas/tenancy/Tenancy.ts"

/**
 * Which plan first includes each rule option (GUIDE §12): Free and Hobby the basics, Pro
 * status checks, code owners and linear history, Enterprise signed commits and push
 * restrictions.
 */
export const optionPlan: Record<ProtectionOption, Plan> = {
  requirePullRequest: "free",
  requiredApprovals: "free",
  dismissStaleReviews: "free",
  allowForcePush: "free",
  allowDeletions: "free",
  requireStatusChecks: "pro",
  requireCodeOwnerReview: "pro",
  requireLinearHistory: "pro",
  requireSignedCommits: "enterprise",
  restrictPushUsers: "enterprise"
}

const rank: Record<Plan, number> = { free: 0, hobby: 0, pro: 1, enterprise: 2 }

export const planIncludes = (plan: Plan, option: ProtectionOption): boolean => rank[plan] >= rank[optionPlan[option]]

/** The gated options a rule turns on (an option left off needs no plan). */
export const optionsInUse = (rule: RuleOptions): ReadonlyArray<ProtectionOption> => {
  const used: Array<ProtectionOption> = []
  if (rule.requireStatusChecks) used.push("requireStatusChecks")
  if (rule.requireCodeOwnerReview) used.push("requireCodeOwnerReview")
  if (rule.requireLinearHistory) used.push("requireLinearHistory")
  if (rule.requireSignedCommits) used.push("requireSignedCommits")
  if (rule.restrictPushUsers.length > 0) used.push("restrictPushUsers")
  return used
}

/** The options of `rule` the plan lacks: refused when set, not enforced after a downgrade. */
export const optionsBeyondPlan = (rule: RuleOptions, plan: Plan): ReadonlyArray<ProtectionOption> =>
  optionsInUse(rule).filter((option) => !planIncludes(plan, option))

/** A rule as the plan enforces it: the options beyond the plan switched off. */
export const enforcedOptions = <R extends RuleOptions>(rule: R, plan: Plan): R => {
  const lost = new Set(optionsBeyondPlan(rule, plan))
  if (lost.size === 0) return rule
  return {
    ...rule,
    requireStatusChecks: lost.has("requireStatusChecks") ? false : rule.requireStatusChecks,
    requiredStatusChecks: lost.has("requireStatusChecks") ? [] : rule.requiredStatusChecks,
    requireCodeOwnerReview: lost.has("requireCodeOwnerReview") ? false : rule.requireCodeOwnerReview,
    requireLinearHistory: lost.has("requireLinearHistory") ? false : rule.requireLinearHistory,
    requireSignedCommits: lost.has("requireSignedCommits") ? false : rule.requireSignedCommits,
    restrictPushUsers: lost.has("restrictPushUsers") ? [] : rule.restrictPushUsers
  }
}
