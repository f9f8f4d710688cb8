import { Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { type GitCommandError, gitText } from "../git/GitProcess.ts"
import type { WalkedCommit } from "../git/NewCommits.ts"
import { ZERO_SHA } from "../git/PktLine.ts"
import { type Pusher, type RefCommand, RefUpdateCheck, type RefUpdateCheckFn } from "../git/RefUpdates.ts"
import type { RepoRecord } from "../git/Repositories.ts"
import { MergeInProgress } from "../pulls/BranchRules.ts"
import type { Actor } from "../tenancy/Actor.ts"
import { actorInOrganization } from "../tenancy/Tenancy.ts"
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

/** A push's lookups in Postgres (each run at most once per push). */
interface Lookups {
  readonly rules: Effect.Effect<(branch: string) => ReadonlyArray<EnforcedRule>>
  readonly keys: Effect.Effect<ReadonlyArray<string>>
  readonly actor: Effect.Effect<Actor | null>
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
    const sql = yield* SqlClient.SqlClient
    /** The pusher with their role in the organization (owners and admins bypass every rule). */
    const actorIn = (userId: string, orgId: string) =>
      actorInOrganization(sql, userId, orgId).pipe(Effect.orDie, Effect.map((found) => found ?? null))

    /** Each lookup on demand, in the check (a ref update that was not prepared). */
    const onDemand = (repo: RepoRecord, pusher: Pusher | null): Lookups => ({
      rules: rules.enforcedMatcher(repo),
      keys: keys.organizationKeys(repo.orgId),
      actor: pusher === null ? Effect.succeed(null) : actorIn(pusher.id, repo.orgId)
    })

    /**
     * The lookups of a push started from its commands: the rules query at once, then, only
     * when a rule matches one of its branches, the pusher and (for signed-commit rules) the
     * organization's keys, all while the pack is still being received and indexed.
     */
    const prefetch = (repo: RepoRecord, commands: ReadonlyArray<RefCommand>, pusher: Pusher | null) =>
      Effect.gen(function*() {
        const lazy = onDemand(repo, pusher)
        const matcher = yield* Effect.forkChild(lazy.rules, { startImmediately: true })
        const rest = yield* Effect.forkChild(
          Effect.gen(function*() {
            const matching = yield* Fiber.join(matcher)
            const matched = commands.map((command) =>
              command.name.startsWith(BRANCH_PREFIX) ? matching(command.name.slice(BRANCH_PREFIX.length)) : []
            )
            if (matched.every((found) => found.length === 0)) return { keys: undefined, actor: undefined }
            const signed = commands.some((command, index) =>
              command.newSha !== ZERO_SHA && matched[index].some((rule) => rule.requireSignedCommits)
            )
            if (signed) signatureWorkers()
            return yield* Effect.all({ keys: signed ? lazy.keys : Effect.undefined, actor: lazy.actor }, {
              concurrency: 2
            })
          }),
          { startImmediately: true }
        )
        // A lookup the prefetch skipped (no rule asked for it) is made on demand.
        return {
          rules: Fiber.join(matcher),
          keys: Effect.flatMap(
            Fiber.join(rest),
            (found) => found.keys === undefined ? lazy.keys : Effect.succeed(found.keys)
          ),
          actor: Effect.flatMap(
            Fiber.join(rest),
            (found) => found.actor === undefined ? lazy.actor : Effect.succeed(found.actor)
          )
        } satisfies Lookups
      })

    const factsOf = (
      command: RefCommand,
      dir: string,
      env: Readonly<Record<string, string>>,
      newCommits: Effect.Effect<ReadonlyArray<WalkedCommit>, GitCommandError>,
      organizationKeys: Effect.Effect<ReadonlyArray<string>>
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
          const [commits, armoredKeys] = yield* Effect.all([walked, organizationKeys], {
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

    const checkWith =
      (lookups: Lookups | undefined): RefUpdateCheckFn => ({ command, dir, env, newCommits, pusher, repo }) =>
        Effect.gen(function*() {
          if (!command.name.startsWith(BRANCH_PREFIX)) return undefined
          if (yield* MergeInProgress) return undefined
          const { actor: actorLookup, keys: keyLookup, rules: matcher } = lookups ?? onDemand(repo, pusher)
          const matching = (yield* matcher)(command.name.slice(BRANCH_PREFIX.length))
          if (matching.length === 0) return undefined
          const facts = yield* factsOf(command, dir, env, newCommits, keyLookup)
          // The commit checks (a git walk, signature verification) run beside the pusher lookup.
          const deleting = command.newSha === ZERO_SHA
          if (!deleting && matching.some((rule) => rule.requireSignedCommits)) yield* Effect.sync(signatureWorkers)
          const warm = deleting ? Effect.void : matching.some((rule) => rule.requireSignedCommits)
            ? facts.unsigned
            : matching.some((rule) => rule.requireLinearHistory)
            ? facts.mergeCommits
            : Effect.void
          const [actor] = yield* Effect.all([actorLookup, warm], { concurrency: 2 })
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

    return Object.assign(checkWith(undefined), {
      prepare: ({ commands, pusher, repo }: Parameters<NonNullable<RefUpdateCheckFn["prepare"]>>[0]) =>
        commands.some((command) => command.name.startsWith(BRANCH_PREFIX))
          ? Effect.map(prefetch(repo, commands, pusher), checkWith)
          : Effect.succeed(checkWith(undefined))
    })
  })
)
