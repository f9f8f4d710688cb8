import { Clock, Context, Data, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { Conflict, NotFound } from "../../schemas/platform/Errors.ts"
import { PullRequestClosed, PullRequestMerged } from "../../schemas/pulls/PullRequestEvents.ts"
import { MergeBlocked, type MergeResult, type MergeStrategy } from "../../schemas/pulls/PullRequests.ts"
import { ZERO_SHA } from "../git/PktLine.ts"
import { RefUpdates } from "../git/RefUpdates.ts"
import { RepoCache, type SyncedRepo } from "../git/RepoCache.ts"
import { ProtectedBranches, type RepoRecord } from "../git/Repositories.ts"
import { closeReferenced } from "../issues/IssueReferences.ts"
import { count, pullRequestMerges } from "../metrics/Metrics.ts"
import type { Actor } from "../tenancy/Actor.ts"
import {
  BranchRules,
  type MergeActor,
  MergeInProgress,
  type MergePolicy,
  ServerMergeStatusChecks
} from "./BranchRules.ts"
import { refOf, withQuarantine } from "./Mergeability.ts"
import { allPassed, evaluateChecks, gatherCodeOwners, gatherReviews } from "./MergeChecks.ts"
import { buildMergeCommit } from "./MergeStrategies.ts"
import { commitsBetween, MergeConflict, packNewObjects } from "./MergeTree.ts"
import { publishPullRequestEvent } from "./PullEvents.ts"
import { isOpen, loadById, markMerged, type PrRow } from "./PullRequestRows.ts"
import { PullRequests } from "./PullRequests.ts"

export interface MergeOptions {
  readonly strategy: MergeStrategy
  readonly commitMessage?: string | undefined
  readonly deleteBranch?: boolean | undefined
}

/** `policy` also requiring `contexts` (each once). */
const withChecks = (policy: MergePolicy, contexts: ReadonlyArray<string>): MergePolicy => ({
  ...policy,
  requiredStatusChecks: [...new Set([...policy.requiredStatusChecks, ...contexts])]
})

/** The target moved between the merge and the compare-and-swap: try again. */
const MAX_ATTEMPTS = 3

/** The default message of a merge or squash commit (GitHub's). */
export const defaultMessage = (row: PrRow, strategy: MergeStrategy) =>
  strategy === "squash"
    ? `${row.title} (#${row.number})${row.body.trim() === "" ? "" : `\n\n${row.body.trim()}`}`
    : `Merge pull request #${row.number} from ${row.source_branch}\n\n${row.title}`

/** A merge the ref update path refused (a protection hook, a race lost three times). */
class RefRefused extends Data.TaggedError("RefRefused")<{ readonly reason: string }> {}

/**
 * Merges a pull request server-side (GUIDE §11): the merge checks of the target's rules
 * (with the bypass of owners, admins and `bypassUsers`, audited), the merge commit(s) from
 * `MergeStrategies`, the target moved through `RefUpdates.apply` (compare-and-swap, `push`
 * event), then the request marked merged with `pull_request.merged` and `.closed`, and the
 * source branch deleted when asked (never the default branch). Run by the pull request's
 * entity, so a manual merge and auto-merge never overlap.
 */
export class Merger extends Context.Service<Merger, {
  /** `actor` merges; `null` with `mergedBy` is auto-merge (no bypass: the rules bind fully). */
  merge(
    prId: string,
    actor: Actor | null,
    mergedBy: Actor,
    options: MergeOptions
  ): Effect.Effect<MergeResult, MergeBlocked | Conflict | NotFound>
}>()("canopy/pulls/Merger") {
  static readonly layer = Layer.effect(
    Merger,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const cache = yield* RepoCache
      const refUpdates = yield* RefUpdates
      const pulls = yield* PullRequests
      const withSql = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
        Effect.provideService(effect, SqlClient.SqlClient, sql)

      /**
       * What the checks read besides the merge itself: reviews, code owners, statuses, and
       * the merged commits (their messages for `Fixes #n`, their signatures when required).
       */
      const gatherFacts = (
        repo: RepoRecord,
        row: PrRow,
        synced: SyncedRepo,
        target: string,
        head: string,
        policy: MergePolicy
      ) =>
        Effect.gen(function*() {
          const rules = yield* BranchRules
          const facts = yield* Effect.all({
            commits: commitsBetween({ dir: synced.dir, env: {} }, target, head).pipe(Effect.orDie),
            reviews: withSql(gatherReviews(row.id)),
            statuses: rules.latestStatuses(repo.id, head),
            codeOwners: withSql(gatherCodeOwners(row.id))
          }, { concurrency: "unbounded" })
          const unsigned = policy.requireSignedCommits
            ? yield* rules.unsignedCommits({ repo, gitDir: synced.dir, env: {}, shas: facts.commits.map((c) => c.sha) })
            : []
          return { ...facts, unsigned }
        })

      /** One attempt: checks, commits, compare-and-swap of the target. */
      const attempt = (repo: RepoRecord, row: PrRow, actor: Actor | null, mergedBy: Actor, options: MergeOptions) =>
        cache.use(repo, (synced) =>
          Effect.gen(function*() {
            const rules = yield* BranchRules
            const head = refOf(synced, row.source_branch)
            const target = refOf(synced, row.target_branch)
            if (Option.isNone(head)) {
              return yield* new Conflict({ message: `The source branch '${row.source_branch}' no longer exists` })
            }
            if (Option.isNone(target)) {
              return yield* new Conflict({ message: `The target branch '${row.target_branch}' no longer exists` })
            }
            const mergeActor: MergeActor | null = actor === null
              ? null
              : { id: actor.id, name: actor.username, role: actor.role }
            const ruled = yield* rules.mergePolicy(repo, row.target_branch, mergeActor)
            // The server's merges also wait for the contexts CI requires (GUIDE §14).
            const serverChecks = actor === null ? yield* (yield* ServerMergeStatusChecks)(repo) : []
            const policies = serverChecks.length === 0 ? ruled : {
              full: withChecks(ruled.full, serverChecks),
              forActor: withChecks(ruled.forActor, serverChecks)
            }
            const message = options.commitMessage ?? defaultMessage(row, options.strategy)
            return yield* withQuarantine(cache, synced, (quarantine) =>
              Effect.gen(function*() {
                const objects = { dir: synced.dir, env: quarantine.env }
                // The merge and the facts the checks read, side by side.
                const building = buildMergeCommit(objects, {
                  strategy: options.strategy,
                  targetSha: target.value,
                  headSha: head.value,
                  message,
                  merger: { name: mergedBy.name, email: mergedBy.email },
                  prAuthor: { name: row.author_name ?? row.author_username, email: row.author_email }
                }).pipe(
                  Effect.map((sha) => ({ sha, conflicts: [] as ReadonlyArray<string> })),
                  Effect.catchTag(
                    "MergeConflict",
                    (conflict: MergeConflict) => Effect.succeed({ sha: undefined, conflicts: conflict.paths })
                  ),
                  Effect.orDie
                )
                const [built, facts] = yield* Effect.all([
                  building,
                  gatherFacts(repo, row, synced, target.value, head.value, policies.full)
                ], { concurrency: 2 })
                const checksUnder = (policy: MergePolicy) =>
                  evaluateChecks({
                    policy,
                    authorId: row.author_id,
                    headSha: head.value,
                    reviews: facts.reviews,
                    mergeable: built.sha !== undefined,
                    conflicts: built.conflicts,
                    statuses: facts.statuses,
                    unsignedCommits: facts.unsigned,
                    codeOwners: facts.codeOwners,
                    strategy: options.strategy
                  })
                const full = checksUnder(policies.full)
                if (!allPassed(full)) {
                  const own = checksUnder(policies.forActor)
                  if (!allPassed(own) || actor === null || mergeActor === null) {
                    const failing = own.filter((c) => c.status !== "passed").map((c) => c.name)
                    return yield* new MergeBlocked({
                      message: `Merge blocked by: ${failing.join(", ")}`,
                      checks: own
                    })
                  }
                  yield* rules.recordBypass({
                    repo,
                    branch: row.target_branch,
                    actor: mergeActor,
                    action: "merge",
                    ruleIds: policies.full.ruleIds,
                    detail: `Merged #${row.number} past: ${
                      full.filter((c) => c.status !== "passed").map((c) => c.name).join(", ")
                    }`
                  })
                }
                const sha = built.sha!
                const packed = yield* packNewObjects(quarantine).pipe(
                  Effect.orDie
                )
                const [result] = yield* refUpdates.apply({
                  repo,
                  dir: synced.dir,
                  quarantine: packed,
                  commands: [{ name: `refs/heads/${row.target_branch}`, oldSha: target.value, newSha: sha }],
                  atomic: true,
                  pusher: { id: mergedBy.id, name: mergedBy.username, email: mergedBy.email },
                  serverCommit: true,
                  // The request is marked merged in the target's compare-and-swap transaction: a crash
                  // never leaves a merged branch with an open pull request (GUIDE §16).
                  alongside: markMergedWithEvents(repo, row, mergedBy, options.strategy, sha, head.value)
                }).pipe(
                  // The merge checks governed this update: the push hook lets it through.
                  Effect.provideService(MergeInProgress, true),
                  Effect.orDie
                )
                if (!result.ok) return yield* new RefRefused({ reason: result.reason ?? "refused" })
                return { sha, message, head: head.value, commitMessages: facts.commits.map((c) => c.message) }
              }))
          })).pipe(Effect.catchTag("GitStorageError", Effect.die))

      /** The request's merged state and its events, written inside the ref update's transaction. */
      const markMergedWithEvents = (
        repo: RepoRecord,
        row: PrRow,
        mergedBy: Actor,
        strategy: MergeStrategy,
        sha: string,
        head: string
      ) =>
        Effect.gen(function*() {
          const now = new Date(yield* Clock.currentTimeMillis)
          yield* markMerged(sql, row.id, { now, mergedBy: mergedBy.id, sha, head })
          const fresh = Option.getOrThrow(yield* withSql(loadById(row.id)))
          const sender = { id: mergedBy.id, name: mergedBy.name }
          yield* withSql(publishPullRequestEvent(PullRequestMerged, repo, fresh, sender, { merge: { sha, strategy } }))
          yield* withSql(publishPullRequestEvent(PullRequestClosed, repo, fresh, sender, { merged: true }))
        }).pipe(Effect.orDie)

      const deleteSource = (repo: RepoRecord, row: PrRow, headSha: string, by: Actor) =>
        Effect.gen(function*() {
          if (row.source_branch === repo.defaultBranch) return
          // GUIDE §11: a protected source branch is kept (no bypass here, even for owners).
          if ((yield* (yield* ProtectedBranches)(repo.id, [row.source_branch])).size > 0) return
          yield* cache.use(repo, (synced) =>
            refUpdates.apply({
              repo,
              dir: synced.dir,
              quarantine: undefined,
              commands: [{ name: `refs/heads/${row.source_branch}`, oldSha: headSha, newSha: ZERO_SHA }],
              atomic: true,
              pusher: { id: by.id, name: by.username, email: by.email }
            })).pipe(
              Effect.tap(([result]) =>
                result.ok ? Effect.void : Effect.logInfo("source branch kept after merge", { reason: result.reason })
              ),
              Effect.orDie
            )
        })

      const merge = Effect.fn("Merger.merge")(
        function*(prId: string, actor: Actor | null, mergedBy: Actor, options: MergeOptions) {
          for (let attemptNo = 1;; attemptNo++) {
            const found = yield* pulls.findById(prId)
            if (Option.isNone(found)) return yield* new NotFound({ message: "Pull request not found" })
            const { repo, row } = found.value
            if (!isOpen(row)) {
              return yield* new Conflict({ message: `Pull request #${row.number} is already ${row.state}` })
            }
            const outcome = yield* attempt(repo, row, actor, mergedBy, options).pipe(
              Effect.map(Option.some),
              Effect.catchTag("RefRefused", (refused) =>
                refused.reason === "fetch first" && attemptNo < MAX_ATTEMPTS
                  ? Effect.succeed(Option.none())
                  : Effect.fail(new Conflict({ message: `The target branch refused the merge: ${refused.reason}` })))
            )
            if (Option.isNone(outcome)) continue
            const { commitMessages, head, message, sha } = outcome.value
            if (options.deleteBranch === true) yield* deleteSource(repo, row, head, mergedBy)
            // `Fixes #n` in the title, body, merge message or merged commits closes issue n.
            yield* withSql(closeReferenced({
              repo,
              texts: [row.title, row.body, message, ...commitMessages],
              pullRequest: { id: row.id, number: row.number },
              actor: { id: mergedBy.id, name: mergedBy.name }
            }))
            yield* count(pullRequestMerges, { strategy: options.strategy }, { org: repo.orgId })
            return { merged: true, sha, strategy: options.strategy, message }
          }
        }
      )

      return Merger.of({ merge })
    })
  )
}
