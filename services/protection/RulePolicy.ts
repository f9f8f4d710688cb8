import picomatch from "picomatch"
import type { ProtectionRule, RuleOptions } from "../../schemas/protection/BranchProtection.ts"
import { type MergePolicy, NO_RULES } from "../pulls/BranchRules.ts"

/** A rule as enforcement sees it: its id, pattern and the options the plan enforces. */
export interface EnforcedRule extends RuleOptions {
  readonly id: string
  readonly branchPattern: string
}

const matchers = new Map<string, picomatch.Matcher>()

/**
 * GUIDE §12 glob semantics with picomatch: `*` stays within one path segment, `**` spans
 * any depth, a name without glob characters matches only itself. Dots are ordinary
 * characters in branch names (`release/v1.*`, `.hidden`).
 */
export const branchMatches = (pattern: string, branch: string): boolean => {
  let matcher = matchers.get(pattern)
  if (matcher === undefined) {
    matcher = picomatch(pattern, { dot: true, nonegate: true })
    if (matchers.size > 10_000) matchers.clear()
    matchers.set(pattern, matcher)
  }
  return matcher(branch)
}

export const matchingRules = <R extends { readonly branchPattern: string }>(
  rules: ReadonlyArray<R>,
  branch: string
): ReadonlyArray<R> => rules.filter((rule) => branchMatches(rule.branchPattern, branch))

/** Several rules combine; each option takes its strictest value (GitHub rulesets). */
export const mergePolicyOf = (rules: ReadonlyArray<EnforcedRule>): MergePolicy => {
  if (rules.length === 0) return NO_RULES
  const contexts = new Set<string>()
  for (const rule of rules) {
    if (rule.requireStatusChecks) { for (const context of rule.requiredStatusChecks) contexts.add(context) }
  }
  return {
    ruleIds: rules.map((rule) => rule.id),
    // A rule without `requirePullRequest` lets direct pushes in; its approvals bind merges only.
    requiredApprovals: Math.max(0, ...rules.map((rule) => rule.requiredApprovals)),
    dismissStaleReviews: rules.some((rule) => rule.dismissStaleReviews),
    requireCodeOwnerReview: rules.some((rule) => rule.requireCodeOwnerReview),
    requiredStatusChecks: [...contexts].sort(),
    requireSignedCommits: rules.some((rule) => rule.requireSignedCommits),
    requireLinearHistory: rules.some((rule) => rule.requireLinearHistory)
  }
}

/** The rules that still bind an actor: none for owners and admins, those not listing them otherwise. */
export const bindingRules = <R extends { readonly bypassUsers: ReadonlyArray<string> }>(
  rules: ReadonlyArray<R>,
  actor: { readonly username: string; readonly role: "owner" | "admin" | "member" } | null
): ReadonlyArray<R> => {
  if (actor === null) return rules
  if (actor.role === "owner" || actor.role === "admin") return []
  const name = actor.username.toLowerCase()
  return rules.filter((rule) => !rule.bypassUsers.some((user) => user.toLowerCase() === name))
}

export type { ProtectionRule }
