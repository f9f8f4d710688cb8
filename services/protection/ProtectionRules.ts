import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { NotFound } from "../../schemas/platform/Errors.ts"
import {
  type CreateProtectionRule,
  type ProtectionOption,
  type ProtectionRule,
  type ProtectionRuleList,
  RULE_DEFAULTS,
  type RuleOptions,
  type UpdateProtectionRule
} from "../../schemas/protection/BranchProtection.ts"
import type { Plan } from "../../schemas/tenancy/Tenancy.ts"
import { PlanRequired } from "../../schemas/webhooks/Webhooks.ts"
import type { RepoRecord } from "../git/Repositories.ts"
import { makeId } from "../platform/Ids.ts"
import { planOrder } from "../tenancy/Plans.ts"
import { organizationPlan } from "../tenancy/Tenancy.ts"
import { enforcedOptions, optionPlan, optionsBeyondPlan } from "./PlanGating.ts"
import {
  deleteRule,
  optionsOf,
  plannedRulesOf,
  ruleById,
  type RuleRow,
  rulesOf,
  upsertRule
} from "./ProtectionRuleRows.ts"
import { type EnforcedRule, matchingRules } from "./RulePolicy.ts"

const toRule = (row: RuleRow, plan: Plan): ProtectionRule => {
  const options = optionsOf(row)
  return {
    id: row.id,
    branchPattern: row.branch_pattern,
    ...options,
    notEnforced: optionsBeyondPlan(options, plan),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString()
  }
}

/**
 * Branch protection rules of a repository (spec 001 "Branch protection"). Writes check the
 * organization's plan (403 `plan_required` for an option it lacks); reads report the
 * options a downgrade stopped enforcing in `notEnforced`; enforcement reads `enforced`.
 */
export class ProtectionRules extends Context.Service<ProtectionRules, {
  list(repo: RepoRecord): Effect.Effect<ProtectionRuleList>
  get(repo: RepoRecord, id: string): Effect.Effect<ProtectionRule, NotFound>
  create(repo: RepoRecord, input: CreateProtectionRule): Effect.Effect<ProtectionRule, PlanRequired>
  update(
    repo: RepoRecord,
    id: string,
    patch: UpdateProtectionRule
  ): Effect.Effect<ProtectionRule, NotFound | PlanRequired>
  remove(repo: RepoRecord, id: string): Effect.Effect<void, NotFound>
  /** The rules matching `branch`, as the organization's current plan enforces them. */
  enforced(repo: RepoRecord, branch: string): Effect.Effect<ReadonlyArray<EnforcedRule>>
  /** `enforced` for any branch of the repository, from one query (a push's refs share it). */
  enforcedMatcher(repo: RepoRecord): Effect.Effect<(branch: string) => ReadonlyArray<EnforcedRule>>
  /** The branches among `branches` that some rule matches (the branch list's `protected`). */
  protectedAmong(repoId: string, branches: ReadonlyArray<string>): Effect.Effect<ReadonlySet<string>>
}>()("canopy/protection/ProtectionRules") {
  static readonly layer = Layer.effect(
    ProtectionRules,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const planOf = (orgId: string) =>
        organizationPlan(sql, orgId).pipe(Effect.orDie, Effect.map(Option.getOrElse((): Plan => "free")))

      const rowsOf = (repoId: string) => rulesOf(sql, repoId).pipe(Effect.orDie)

      const findRow = (repo: RepoRecord, id: string) =>
        ruleById(sql, repo.id, id).pipe(
          Effect.orDie,
          Effect.flatMap((rows) =>
            rows.length === 0
              ? Effect.fail(new NotFound({ message: `Branch protection rule '${id}' not found` }))
              : Effect.succeed(rows[0])
          )
        )

      const refuseBeyond = (beyond: ReadonlyArray<ProtectionOption>, plan: Plan) => {
        if (beyond.length === 0) return Effect.void
        // The smallest plan that includes every option asked for.
        const requiredPlan = beyond.map((option) => optionPlan[option]).reduce((a, b) =>
          planOrder.indexOf(b) > planOrder.indexOf(a) ? b : a
        )
        return Effect.fail(
          new PlanRequired({
            message: `The ${plan} plan does not include ${beyond.join(", ")}; upgrade to ${requiredPlan}`,
            requiredPlan
          })
        )
      }

      const list = Effect.fn("ProtectionRules.list")(function*(repo: RepoRecord) {
        const plan = yield* planOf(repo.orgId)
        const rules = (yield* rowsOf(repo.id)).map((row) => toRule(row, plan))
        return { rules, count: rules.length }
      })

      const get = Effect.fn("ProtectionRules.get")(function*(repo: RepoRecord, id: string) {
        return toRule(yield* findRow(repo, id), yield* planOf(repo.orgId))
      })

      const write = (id: string, repo: RepoRecord, pattern: string, o: RuleOptions) =>
        upsertRule(sql, id, repo.id, pattern, o).pipe(Effect.orDie)

      const create = Effect.fn("ProtectionRules.create")(function*(repo: RepoRecord, input: CreateProtectionRule) {
        const { branchPattern, ...given } = input
        const options: RuleOptions = { ...RULE_DEFAULTS, ...given }
        const plan = yield* planOf(repo.orgId)
        yield* refuseBeyond(optionsBeyondPlan(options, plan), plan)
        const id = makeId("rule")
        yield* write(id, repo, branchPattern, options)
        return yield* Effect.orDie(get(repo, id))
      })

      const update = Effect.fn("ProtectionRules.update")(
        function*(repo: RepoRecord, id: string, patch: UpdateProtectionRule) {
          const row = yield* findRow(repo, id)
          const { branchPattern, ...given } = patch
          const current = optionsOf(row)
          const options: RuleOptions = { ...current, ...given }
          // Only what this request turns on is gated: a rule kept through a downgrade stays editable.
          const plan = yield* planOf(repo.orgId)
          const alreadyBeyond = new Set(optionsBeyondPlan(current, plan))
          const newlyBeyond = optionsBeyondPlan(options, plan).filter((option) => !alreadyBeyond.has(option))
          yield* refuseBeyond(newlyBeyond, plan)
          yield* write(id, repo, branchPattern ?? row.branch_pattern, options)
          return yield* get(repo, id)
        }
      )

      const remove = Effect.fn("ProtectionRules.remove")(function*(repo: RepoRecord, id: string) {
        yield* findRow(repo, id)
        yield* deleteRule(sql, repo.id, id).pipe(Effect.orDie)
      })

      const enforcedMatcher = (repo: RepoRecord) =>
        Effect.gen(function*() {
          // One round trip: the rules with the organization's plan (a push checks every ref).
          const rows = yield* plannedRulesOf(sql, repo.orgId, repo.id).pipe(Effect.orDie)
          const patterns = rows.map((row) => ({ branchPattern: row.branch_pattern, row }))
          return (branch: string): ReadonlyArray<EnforcedRule> =>
            matchingRules(patterns, branch).map(({ row }): EnforcedRule => ({
              id: row.id,
              branchPattern: row.branch_pattern,
              ...enforcedOptions(optionsOf(row), row.plan)
            }))
        })

      const enforced = (repo: RepoRecord, branch: string) =>
        Effect.map(enforcedMatcher(repo), (matching) => matching(branch))

      const protectedAmong = (repoId: string, branches: ReadonlyArray<string>) =>
        Effect.map(
          rowsOf(repoId),
          (rows): ReadonlySet<string> =>
            new Set(branches.filter((branch) =>
              matchingRules(rows.map((r) => ({ branchPattern: r.branch_pattern })), branch).length > 0
            ))
        )

      return ProtectionRules.of({ list, get, create, update, remove, enforced, enforcedMatcher, protectedAmong })
    })
  )
}
