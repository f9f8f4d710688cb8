import { Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { RuleOptions } from "../../schemas/protection/BranchProtection.ts"
import { Plan } from "../../schemas/tenancy/Tenancy.ts"
import { decodeRows } from "../platform/Rows.ts"
import { organizationPlanExpression } from "../tenancy/Tenancy.ts"

/*
 * The `branch_protection_rules` table: its row, the options it stores, and every statement on it.
 */

/** A stored rule. */
export const RuleRow = Schema.Struct({
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
export type RuleRow = typeof RuleRow.Type

/** A rule with its organization's plan (what enforcement reads). */
const PlannedRuleRow = Schema.Struct({ ...RuleRow.fields, plan: Plan })

export const optionsOf = (row: RuleRow): RuleOptions => ({
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

const unique = (values: ReadonlyArray<string>) => [...new Set(values)]

/** A repository's rules, oldest first. */
export const rulesOf = (sql: SqlClient.SqlClient, repoId: string) =>
  sql`SELECT * FROM branch_protection_rules WHERE repo_id = ${repoId} ORDER BY created_at, id`.pipe(
    decodeRows(RuleRow)
  )

export const ruleById = (sql: SqlClient.SqlClient, repoId: string, id: string) =>
  sql`SELECT * FROM branch_protection_rules WHERE id = ${id} AND repo_id = ${repoId}`.pipe(decodeRows(RuleRow))

/** Inserts the rule `id`, or replaces its pattern and options. */
export const upsertRule = (sql: SqlClient.SqlClient, id: string, repoId: string, pattern: string, o: RuleOptions) =>
  sql`
    INSERT INTO branch_protection_rules (
      id, repo_id, branch_pattern, require_pull_request, required_approvals, dismiss_stale_reviews,
      require_code_owner_review, require_signed_commits, require_linear_history, allow_force_push,
      allow_deletions, restrict_push_users, require_status_checks, required_status_checks, bypass_users)
    VALUES (
      ${id}, ${repoId}, ${pattern}, ${o.requirePullRequest}, ${o.requiredApprovals}, ${o.dismissStaleReviews},
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
      updated_at = now()`

export const deleteRule = (sql: SqlClient.SqlClient, repoId: string, id: string) =>
  sql`DELETE FROM branch_protection_rules WHERE id = ${id} AND repo_id = ${repoId}`

/** A repository's rules with its organization's plan, in one round trip (a push checks every ref). */
export const plannedRulesOf = (sql: SqlClient.SqlClient, orgId: string, repoId: string) =>
  sql`
    SELECT r.*, ${organizationPlanExpression(sql, orgId)} AS plan FROM branch_protection_rules r
    WHERE r.repo_id = ${repoId} ORDER BY r.created_at, r.id`.pipe(decodeRows(PlannedRuleRow))
