import { Effect, Layer } from "effect"
import { type GitCommandError, gitText } from "../git/GitProcess.ts"
import type { WalkedCommit } from "../git/NewCommits.ts"
import { ZERO_SHA } from "../git/PktLine.ts"
import { type RefCommand, RefUpdateCheck, type RefUpdateCheckFn } from "../git/RefUpdates.ts"
import type { RepoRecord } from "../git/Repositories.ts"
import { MergeInProgress } from "../pulls/BranchRules.ts"
import { Actors } from "./Actors.ts"
import { AuditLog } from "./AuditLog.ts"
import { unverifiedCommits } from "./CommitSignatures.ts"
import { GpgKeys } from "./GpgKeys.ts"
import { ProtectionRules } from "./ProtectionRules.ts"
import { bindingRules, type EnforcedRule } from "./RulePolicy.ts"
import { signatureWorkers } from "./SignatureWorkers.ts"

const BRANCH_PREFIX = "refs/heads/"

/** What a push brings to a branch, computed at most once per ref and only when a rule asks. */
interface PushFacts {
  readonly fastForward: Effect.Effect<boolean>
  readonly mergeCommits: Effect.Effect<ReadonlyArray<string>>
  readonly unsigned: Effect.Effect<ReadonlyArray<string>>
}

const short = (sha: string) => sha.slice(0, 7)

/** Every reason `rule` refuses the command for; deletions only answer to `allowDeletions` (and pushers). */
const refusals = (
  rule: EnforcedRule,
  command: RefCommand,
  pusherName: string | null,
  facts: PushFacts
): Effect.Effect<ReadonlyArray<string>> =>
  Effect.gen(function*() {
    const reasons: Array<string> = []
    const allowed = rule.restrictPushUsers.length === 0 ||
      (pusherName !== null && rule.restrictPushUsers.some((user) => user.toLowerCase() === pusherName.toLowerCase()))
    if (!allowed) reasons.push("you are not allowed to push to this branch")
    if (command.newSha === ZERO_SHA) {
      if (!rule.allowDeletions) reasons.push("branch deletion is not allowed")
      return reasons
    }
    const creating = command.oldSha === ZERO_SHA
    // A new branch has nothing to bypass review of; its commits still answer to the other options.
    if (!creating && rule.requirePullRequest) reasons.push("changes must be made through a pull request")
    if (!creating && !rule.allowForcePush && !(yield* facts.fastForward)) reasons.push("force push is not allowed")
    if (rule.requireLinearHistory) {
      const merges = yield* facts.mergeCommits
      if (merges.length > 0) reasons.push(`merge commit ${short(merges[0])} is not allowed (linear history required)`)
    }
    if (rule.requireSignedCommits) {
      const unsigned = yield* facts.unsigned
      if (unsigned.length > 0) {
        reasons.push(
          `commit ${short(unsigned[0])} is not signed with a GPG key registered in this organization` +
            (unsigned.length > 1 ? ` (and ${unsigned.length - 1} more)` : "")
        )
      }
    }
    return reasons
  })

/**
 * Branch protection on push (GUIDE §12): the `RefUpdateCheck` every `RefUpdates.apply`
 * runs per ref. Every rule matching the branch is checked; a refusal by a rule the pusher
 * does not bypass is the ref's `ng` reason; a refusal only by bypassed rules lets the ref
 * through and writes a `protection.bypass.push` audit entry. A pull request merge
 * (`MergeInProgress`) passes: its merge checks already applied the rules.
 */
export const PushProtectionLive = Layer.effect(
  RefUpdateCheck,
  Effect.gen(function*() {
    const rules = yield* ProtectionRules
    const keys = yield* GpgKeys
    const audit = yield* AuditLog
    const actors = yield* Actors

    const factsOf = (
      repo: RepoRecord,
      command: RefCommand,
      dir: string,
      env: Readonly<Record<string, string>>,
      newCommits: Effect.Effect<ReadonlyArray<WalkedCommit>, GitCommandError>
    ) => {
      const git = (args: ReadonlyArray<string>) => gitText({ gitDir: dir, env, args })
      // The shared walk of the new commits gives their parents (merge commits have two or
      // more) and their objects, so signatures need no second git process in the common case.
      const walked = Effect.orDie(newCommits)
      return Effect.all({
        fastForward: Effect.cached(
          git(["merge-base", "--is-ancestor", command.oldSha, command.newSha]).pipe(
            Effect.as(true),
            Effect.orElseSucceed(() => false)
          )
        ),
        mergeCommits: Effect.succeed(
          Effect.map(walked, (commits) => commits.filter((c) => c.parents.length > 1).map((c) => c.sha))
        ),
        unsigned: Effect.cached(Effect.gen(function*() {
          const [commits, armoredKeys] = yield* Effect.all([walked, keys.organizationKeys(repo.orgId)], {
            concurrency: 2
          })
          return yield* unverifiedCommits({
            gitDir: dir,
            env,
            shas: commits.map((c) => c.sha),
            armoredKeys,
            objects: new Map(commits.map((c) => [c.sha, c.object]))
          })
        }))
      })
    }

    const check: RefUpdateCheckFn = ({ command, dir, env, newCommits, pusher, repo }) =>
      Effect.gen(function*() {
        if (!command.name.startsWith(BRANCH_PREFIX)) return undefined
        if (yield* MergeInProgress) return undefined
        const branch = command.name.slice(BRANCH_PREFIX.length)
        const matching = yield* rules.enforced(repo, branch)
        if (matching.length === 0) return undefined
        const facts = yield* factsOf(repo, command, dir, env, newCommits)
        // The commit checks (a git walk, signature verification) run beside the pusher lookup.
        const deleting = command.newSha === ZERO_SHA
        if (!deleting && matching.some((rule) => rule.requireSignedCommits)) yield* Effect.sync(signatureWorkers)
        const warm = deleting ? Effect.void : matching.some((rule) => rule.requireSignedCommits)
          ? facts.unsigned
          : matching.some((rule) => rule.requireLinearHistory)
          ? facts.mergeCommits
          : Effect.void
        const [actor] = yield* Effect.all([
          pusher === null ? Effect.succeed(null) : actors.inOrganization(pusher.id, repo.orgId),
          warm
        ], { concurrency: 2 })
        const refused: Array<{ rule: EnforcedRule; reasons: ReadonlyArray<string> }> = []
        for (const rule of matching) {
          const reasons = yield* refusals(rule, command, actor?.username ?? null, facts)
          if (reasons.length > 0) refused.push({ rule, reasons })
        }
        if (refused.length === 0) return undefined
        const binding = new Set(bindingRules(matching, actor).map((rule) => rule.id))
        const blocking = refused.find(({ rule }) => binding.has(rule.id))
        if (blocking !== undefined) return `protected branch: ${blocking.reasons[0]}`
        if (actor !== null) {
          yield* audit.record({
            orgId: repo.orgId,
            action: "protection.bypass.push",
            actor: { id: actor.id, username: actor.username },
            repo: { id: repo.id, fullName: `${repo.orgSlug}/${repo.slug}` },
            ref: command.name,
            ruleIds: refused.map(({ rule }) => rule.id),
            detail: `Pushed ${short(command.oldSha)}..${short(command.newSha)} past: ${
              [...new Set(refused.flatMap(({ reasons }) => reasons))].join("; ")
            }`
          })
        }
        return undefined
      })

    return check
  })
)
