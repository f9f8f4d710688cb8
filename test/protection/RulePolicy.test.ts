import { describe, expect, it } from "@effect/vitest"
import { RULE_DEFAULTS } from "../../schemas/protection/BranchProtection.ts"
import { enforcedOptions, optionsBeyondPlan } from "../../services/protection/PlanGating.ts"
import { bindingRules, branchMatches, mergePolicyOf } from "../../services/protection/RulePolicy.ts"

const rule = (id: string, branchPattern: string, options: Partial<typeof RULE_DEFAULTS> = {}) => ({
  id,
  branchPattern,
  ...RULE_DEFAULTS,
  ...options
})

describe("RulePolicy (pure)", () => {
  it("matches branch names the GUIDE's way", () => {
    const cases: Array<[string, string, boolean]> = [
      ["main", "main", true],
      ["main", "main2", false],
      ["main", "x/main", false],
      ["release/*", "release/1.0", true],
      ["release/*", "release/1/hotfix", false],
      ["release/*", "release", false],
      ["feature/**", "feature/a", true],
      ["feature/**", "feature/a/b/c", true],
      ["hotfix-*", "hotfix-12", true],
      ["hotfix-*", "hotfix/12", false],
      ["*", ".hidden", true],
      ["!main", "other", false]
    ]
    for (const [pattern, branch, expected] of cases) {
      expect([pattern, branch, branchMatches(pattern, branch)]).toEqual([pattern, branch, expected])
    }
  })

  it("combines rules strictest-wins and lets owners, admins and listed users through", () => {
    const a = rule("a", "main", {
      requiredApprovals: 1,
      requireStatusChecks: true,
      requiredStatusChecks: ["b", "a"],
      bypassUsers: ["Bob"]
    })
    const b = rule("b", "ma*", {
      requiredApprovals: 3,
      requireStatusChecks: false,
      requiredStatusChecks: ["ignored"],
      requireSignedCommits: true
    })
    expect(mergePolicyOf([a, b])).toEqual({
      ruleIds: ["a", "b"],
      requiredApprovals: 3,
      dismissStaleReviews: false,
      requireCodeOwnerReview: false,
      requiredStatusChecks: ["a", "b"],
      requireSignedCommits: true,
      requireLinearHistory: false
    })
    expect(bindingRules([a, b], { username: "bob", role: "member" }).map((r) => r.id)).toEqual(["b"])
    expect(bindingRules([a, b], { username: "carol", role: "member" }).map((r) => r.id)).toEqual(["a", "b"])
    expect(bindingRules([a, b], { username: "carol", role: "admin" })).toEqual([])
    expect(bindingRules([a, b], null).map((r) => r.id)).toEqual(["a", "b"])
    expect(mergePolicyOf([]).ruleIds).toEqual([])
  })

  it("plans: gated options are listed and switched off, others kept", () => {
    const r = rule("r", "main", {
      requireLinearHistory: true,
      restrictPushUsers: ["x"],
      requireStatusChecks: true,
      requiredStatusChecks: ["ci"]
    })
    expect(optionsBeyondPlan(r, "enterprise")).toEqual([])
    expect(optionsBeyondPlan(r, "pro")).toEqual(["restrictPushUsers"])
    expect(optionsBeyondPlan(r, "hobby")).toEqual(["requireStatusChecks", "requireLinearHistory", "restrictPushUsers"])
    expect(enforcedOptions(r, "free")).toMatchObject({
      requireLinearHistory: false,
      restrictPushUsers: [],
      requireStatusChecks: false,
      requiredStatusChecks: [],
      requirePullRequest: true,
      requiredApprovals: 1
    })
    expect(enforcedOptions(r, "enterprise")).toBe(r)
  })
})
