import type { ProtectionOption, RuleOptions } from "../../schemas/protection/BranchProtection.ts"
import type { Plan } from "../../schemas/tenancy/Tenancy.ts"
import { planOrder, plans } from "../tenancy/Plans.ts"

/** The smallest plan whose table entry includes `option` (GUIDE §12, from the plan table). */
const firstPlanWith = (option: ProtectionOption): Plan =>
  planOrder.find((plan) => plans[plan].protectionOptions.includes(option)) ?? "enterprise"

/** Which plan first includes each rule option. */
export const optionPlan: Record<ProtectionOption, Plan> = {
  requirePullRequest: firstPlanWith("requirePullRequest"),
  requiredApprovals: firstPlanWith("requiredApprovals"),
  dismissStaleReviews: firstPlanWith("dismissStaleReviews"),
  allowForcePush: firstPlanWith("allowForcePush"),
  allowDeletions: firstPlanWith("allowDeletions"),
  requireStatusChecks: firstPlanWith("requireStatusChecks"),
  requireCodeOwnerReview: firstPlanWith("requireCodeOwnerReview"),
  requireLinearHistory: firstPlanWith("requireLinearHistory"),
  requireSignedCommits: firstPlanWith("requireSignedCommits"),
  restrictPushUsers: firstPlanWith("restrictPushUsers")
}

export const planIncludes = (plan: Plan, option: ProtectionOption): boolean =>
  plans[plan].protectionOptions.includes(option)

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
