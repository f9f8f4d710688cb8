import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { BranchRules, type BranchRulesShape, type MergeActor } from "../pulls/BranchRules.ts"
import { actorInOrganization } from "../tenancy/Tenancy.ts"
import { AuditLog } from "./AuditLog.ts"
import { unverifiedCommits } from "./CommitSignatures.ts"
import { CommitStatuses } from "./CommitStatuses.ts"
import { GpgKeys } from "./GpgKeys.ts"
import { ProtectionRules } from "./ProtectionRules.ts"
import { bindingRules, mergePolicyOf } from "./RulePolicy.ts"

/**
 * Branch protection's answers to the merge-check engine (services/pulls/BranchRules.ts):
 * the rules matching the target combined strictest-wins, in full and for the merging
 * actor (owners and admins bypass all rules, `bypassUsers` their rule), the latest status
 * per context, signature verification and the audit of merge bypasses.
 */
export const BranchRulesLive = Layer.effect(
  BranchRules,
  Effect.gen(function*() {
    // A `BranchRules` provided from outside (a test's seam) is kept, not shadowed.
    const outer = yield* Effect.context<never>()
    if (outer.mapUnsafe.has(BranchRules.key)) return Context.get(outer, BranchRules)
    const rules = yield* ProtectionRules
    const statuses = yield* CommitStatuses
    const keys = yield* GpgKeys
    const audit = yield* AuditLog
    const sql = yield* SqlClient.SqlClient

    /** The actor's username and role as stored now (the caller's copy may be a display name). */
    const resolve = (actor: MergeActor, orgId: string) =>
      Effect.map(actorInOrganization(sql, actor.id, orgId).pipe(Effect.orDie), (found) =>
        found === undefined
          ? { id: actor.id, username: actor.name, role: actor.role }
          : { ...found, role: actor.role === "owner" || actor.role === "admin" ? actor.role : found.role })

    const shape: BranchRulesShape = {
      mergePolicy: (repo, branch, actor) =>
        Effect.gen(function*() {
          const matching = yield* rules.enforced(repo, branch)
          const full = mergePolicyOf(matching)
          if (matching.length === 0 || actor === null) return { full, forActor: full }
          const resolved = yield* resolve(actor, repo.orgId)
          return { full, forActor: mergePolicyOf(bindingRules(matching, resolved)) }
        }),
      latestStatuses: (repoId, sha) => statuses.latest(repoId, sha),
      unsignedCommits: ({ env, gitDir, repo, shas }) =>
        Effect.flatMap(
          keys.organizationKeys(repo.orgId),
          (armoredKeys) => unverifiedCommits({ gitDir, env, shas, armoredKeys })
        ),
      recordBypass: (input) =>
        Effect.gen(function*() {
          const resolved = yield* resolve(input.actor, input.repo.orgId)
          yield* audit.record({
            orgId: input.repo.orgId,
            action: "protection.bypass.merge",
            actor: { id: resolved.id, username: resolved.username },
            repo: { id: input.repo.id, fullName: `${input.repo.orgSlug}/${input.repo.slug}` },
            ref: `refs/heads/${input.branch}`,
            ruleIds: input.ruleIds,
            detail: input.detail
          })
        })
    }
    return shape
  })
)
