import { Context, Effect, Layer, Option, Schema } from "effect"
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
import { Plan } from "../../schemas/tenancy/Tenancy.ts"
import { PlanRequired } from "../../schemas/webhooks/Webhooks.ts"
import type { RepoRecord } from "../git/Repositories.ts"
import { makeId } from "../platform/Ids.ts"
import { decodeRows } from "../platform/Rows.ts"
import { planOrder } from "../tenancy/Plans.ts"
import { organizationPlan, organizationPlanExpression } from "../tenancy/Tenancy.ts"
import { enforcedOptions, optionPlan, optionsBeyondPlan } from "./PlanGating.ts"
import { type EnforcedRule, matchingRules } from "./RulePolicy.ts"

/** A stored rule. */
const RuleRow = Schema.Struct({
  id: Schema.String,
  repo_id: Schema.String,
  branch_pattern: Schema.String,
  require_pull_request: Schema.Boolean,
  required_approvals: Schema.Int,
  dismiss_stale_reviews: Schema.Boolean,
  require_code_owner_review: Schema.Boolean,
  require_signed_commits: Schema.Boolean,
  require_linear_history: Schema.Boolean,
  allow_force_push: Schema.Boolean,
  allow_deletions: Schema.Boolean,
  restrict_push_users: Schema.Array(Schema.String),
  require_status_checks: Schema.Boolean,
  required_status_checks: Schema.Array(Schema.String),
  bypass_users: Schema.Array(Schema.String),
  created_at: Schema.Date,
  updated_at: Schema.Date
})
type RuleRow = typeof RuleRow.Type

/** A rule with its organization's plan (what enforcement reads). */
const PlannedRuleRow = Schema.Struct({ ...RuleRow.fields, plan: Plan })

const optionsOf = (row: RuleRow): RuleOptions => ({
  requirePullRequest: row.require_pull_request,
  requiredApprovals: row.required_approvals,
  dismissStaleReviews: row.dismiss_stale_reviews,
  requireCodeOwnerReview: row.require_code_owner_review,
  requireSignedCommits: row.require_signed_commits,
  requireLinearHistory: row.require_linear_history,
  allowForcePush: row.allow_force_push,
  allowDeletions: row.allow_deletions,
  restrictPushUsers: row.restrict_push_users,
  requireStatusChecks: row.require_status_checks,
  requiredStatusChecks: row.required_status_checks,
  bypassUsers: row.bypass_users
})

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

const unique = (values: ReadonlyArray<string>) => [...new Set(values)]

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

      const rowsOf = (repoId: string) =>
        sql`SELECT * FROM branch_protection_rules WHERE repo_id = ${repoId} ORDER BY created_at, id`.pipe(
          decodeRows(RuleRow),
          Effect.orDie
        )

      const findRow = (repo: RepoRecord, id: string) =>
        sql`SELECT * FROM branch_protection_rules WHERE id = ${id} AND repo_id = ${repo.id}`.pipe(
          decodeRows(RuleRow),
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
        sql`
          INSERT INTO branch_protection_rules (
            id, repo_id, branch_pattern, require_pull_request, required_approvals, dismiss_stale_reviews,
            require_code_owner_review, require_signed_commits, require_linear_history, allow_force_push,
            allow_deletions, restrict_push_users, require_status_checks, required_status_checks, bypass_users)
          VALUES (
            ${id}, ${repo.id}, ${pattern}, ${o.requirePullRequest}, ${o.requiredApprovals}, ${o.dismissStaleReviews},
            ${o.requireCodeOwnerReview}, ${o.requireSignedCommits}, ${o.requireLinearHistory}, ${o.allowForcePush},
            ${o.allowDeletions}, ${unique(o.restrictPushUsers)}, ${o.requireStatusChecks},
            ${unique(o.requiredStatusChecks)}, ${unique(o.bypassUsers)})
          ON CONFLICT (id) DO UPDATE SET
            branch_pattern = excluded.branch_pattern,
            require_pull_request = excluded.require_pull_request,
            required_approvals = excluded.required_approvals,
            dismiss_stale_reviews = excluded.dismiss_stale_reviews,
            require_code_owner_review = excluded.require_code_owner_review,
            require_signed_commits = excluded.require_signed_commits,
            require_linear_history = excluded.require_linear_history,
            allow_force_push = excluded.allow_force_push,
            allow_deletions = excluded.allow_deletions,
            restrict_push_users = excluded.restrict_push_users,
            require_status_checks = excluded.require_status_checks,
            required_status_checks = excluded.required_status_checks,
            bypass_users = excluded.bypass_users,
            updated_at = now()`.pipe(Effect.orDie)

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
        yield* sql`DELETE FROM branch_protection_rules WHERE id = ${id} AND repo_id = ${repo.id}`.pipe(Effect.orDie)
      })

      const enforcedMatcher = (repo: RepoRecord) =>
        Effect.gen(function*() {
          // One round trip: the rules with the organization's plan (a push checks every ref).
          const rows = yield* sql`
            SELECT r.*, ${organizationPlanExpression(sql, repo.orgId)} AS plan FROM branch_protection_rules r
            WHERE r.repo_id = ${repo.id} ORDER BY r.created_at, r.id`.pipe(decodeRows(PlannedRuleRow), Effect.orDie)
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
