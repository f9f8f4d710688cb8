import { Schema } from "effect"
import { Username } from "../tenancy/Tenancy.ts"

/** The options of a rule that a plan may lack (GUIDE §12 "Plans"). */
export const ProtectionOption = Schema.Literals([
  "requirePullRequest",
  "requiredApprovals",
  "dismissStaleReviews",
  "allowForcePush",
  "allowDeletions",
  "requireStatusChecks",
  "requireCodeOwnerReview",
  "requireLinearHistory",
  "requireSignedCommits",
  "restrictPushUsers"
])
export type ProtectionOption = typeof ProtectionOption.Type

/** A glob over branch names (picomatch): `main`, `release/*`, `feature/**`, `hotfix-*`. */
export const BranchPattern = Schema.String.check(
  Schema.isMinLength(1),
  Schema.isMaxLength(255),
  Schema.makeFilter((pattern: string) =>
    !/\s/.test(pattern) && !pattern.startsWith("refs/") || "must be a branch name glob without spaces or refs/"
  )
)

const Approvals = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10 }))
const Users = Schema.Array(Username).check(Schema.isMaxLength(100))
const Contexts = Schema.Array(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(255))).check(
  Schema.isMaxLength(50)
)

/** Spec 001 "Branch protection rule", with `bypassUsers` (GUIDE §12) and `notEnforced`. */
export const ProtectionRule = Schema.Struct({
  id: Schema.String,
  branchPattern: Schema.String,
  requirePullRequest: Schema.Boolean,
  requiredApprovals: Schema.Int,
  dismissStaleReviews: Schema.Boolean,
  requireCodeOwnerReview: Schema.Boolean,
  requireSignedCommits: Schema.Boolean,
  requireLinearHistory: Schema.Boolean,
  allowForcePush: Schema.Boolean,
  allowDeletions: Schema.Boolean,
  restrictPushUsers: Schema.Array(Schema.String),
  requireStatusChecks: Schema.Boolean,
  requiredStatusChecks: Schema.Array(Schema.String),
  bypassUsers: Schema.Array(Schema.String),
  /**
   * Options set on this rule that the organization's current plan does not include (after
   * a downgrade): kept as configured, not enforced until the plan includes them again.
   */
  notEnforced: Schema.Array(ProtectionOption),
  createdAt: Schema.String,
  updatedAt: Schema.String
})
export type ProtectionRule = typeof ProtectionRule.Type

export const ProtectionRuleList = Schema.Struct({ rules: Schema.Array(ProtectionRule), count: Schema.Int })
export type ProtectionRuleList = typeof ProtectionRuleList.Type

const optionFields = {
  requirePullRequest: Schema.optionalKey(Schema.Boolean),
  requiredApprovals: Schema.optionalKey(Approvals),
  dismissStaleReviews: Schema.optionalKey(Schema.Boolean),
  requireCodeOwnerReview: Schema.optionalKey(Schema.Boolean),
  requireSignedCommits: Schema.optionalKey(Schema.Boolean),
  requireLinearHistory: Schema.optionalKey(Schema.Boolean),
  allowForcePush: Schema.optionalKey(Schema.Boolean),
  allowDeletions: Schema.optionalKey(Schema.Boolean),
  restrictPushUsers: Schema.optionalKey(Users),
  requireStatusChecks: Schema.optionalKey(Schema.Boolean),
  requiredStatusChecks: Schema.optionalKey(Contexts),
  bypassUsers: Schema.optionalKey(Users)
}

export const CreateProtectionRule = Schema.Struct({ branchPattern: BranchPattern, ...optionFields })
export type CreateProtectionRule = typeof CreateProtectionRule.Type

export const UpdateProtectionRule = Schema.Struct({ branchPattern: Schema.optionalKey(BranchPattern), ...optionFields })
export type UpdateProtectionRule = typeof UpdateProtectionRule.Type

/** The options of a rule, as stored and combined. */
export type RuleOptions = Omit<ProtectionRule, "id" | "branchPattern" | "notEnforced" | "createdAt" | "updatedAt">

/** Spec 001 defaults. */
export const RULE_DEFAULTS: RuleOptions = {
  requirePullRequest: true,
  requiredApprovals: 1,
  dismissStaleReviews: false,
  requireCodeOwnerReview: false,
  requireSignedCommits: false,
  requireLinearHistory: false,
  allowForcePush: false,
  allowDeletions: false,
  restrictPushUsers: [],
  requireStatusChecks: false,
  requiredStatusChecks: [],
  bypassUsers: []
}
