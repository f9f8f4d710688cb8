import { Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"
import { PullRequestUpdated } from "../../schemas/pulls/PullRequestEvents.ts"
import type { MergeableState } from "../../schemas/pulls/PullRequests.ts"
import { makeQuarantine, type Quarantine, removeQuarantine } from "../git/Quarantine.ts"
import { type GitStorageError, RepoCache, type SyncedRepo } from "../git/RepoCache.ts"
import type { RepoRecord } from "../git/Repositories.ts"
import { memberUsernamesByEmail } from "../tenancy/Tenancy.ts"
import { BranchRules } from "./BranchRules.ts"
import { CodeOwners } from "./CodeOwners.ts"
import { allPassed, evaluateChecks, gatherCodeOwners, gatherReviews } from "./MergeChecks.ts"
import { MergeConflict, mergeTrees } from "./MergeTree.ts"
import { changedFiles } from "./PullDiff.ts"
import { publishPullRequestEvent } from "./PullEvents.ts"
import { isOpen, loadById, moveHead, type PrRow, recordTestMerge, setMergeableState } from "./PullRequestRows.ts"
import { PullRequests } from "./PullRequests.ts"
import { Reviews } from "./Reviews.ts"

/** Runs `work` with an empty quarantine next to the synced repository; removed afterwards. */
export const withQuarantine = <A, E, R>(
  cache: RepoCache["Service"],
  synced: SyncedRepo,
  work: (quarantine: Quarantine) => Effect.Effect<A, E, R>
): Effect.Effect<A, E | GitStorageError, R> =>
  Effect.acquireUseRelease(
    Effect.tap(
      Effect.map(cache.tempDir(), (dir) => makeQuarantine(synced.dir, dir)),
      (quarantine) => Effect.promise(() => FsP.mkdir(Path.join(quarantine.dir, "objects"), { recursive: true }))
    ),
    work,
    removeQuarantine
  )

export const refOf = (synced: SyncedRepo, branch: string) =>
  Option.fromNullishOr(synced.refs.find((ref) => ref.name === `refs/heads/${branch}`)?.sha)

/** Whether `head` merges cleanly into `target`, and the paths that conflict if not. */
export const testMerge = (cache: RepoCache["Service"], synced: SyncedRepo, target: string, head: string) =>
  withQuarantine(cache, synced, (quarantine) =>
    mergeTrees({ dir: synced.dir, env: quarantine.env }, target, head).pipe(
      Effect.as({ mergeable: true, conflicts: [] as ReadonlyArray<string> }),
      Effect.catchTag("MergeConflict", (conflict: MergeConflict) =>
        Effect.succeed({ mergeable: false, conflicts: conflict.paths }))
    ))

/**
 * Brings a pull request up to date with its branches (run by its entity after every push,
 * review, status or edit): a moved source head is recorded as activity with a
 * `pull_request.updated` event, mergeability is recomputed when either branch moved, and
 * `mergeableState` from the merge checks of the target's rules.
 */
export class Mergeability extends Context.Service<Mergeability, {
  refresh(prId: string, sender: { readonly id: string; readonly name: string } | null): Effect.Effect<
    Option.Option<PrRow>,
    GitStorageError
  >
}>()("canopy/pulls/Mergeability") {
  static readonly layer = Layer.effect(
    Mergeability,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const cache = yield* RepoCache
      const pulls = yield* PullRequests
      const reviews = yield* Reviews
      const codeOwners = yield* CodeOwners
      const withSql = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
        Effect.provideService(effect, SqlClient.SqlClient, sql)

      const recordHead = (repo: RepoRecord, row: PrRow, head: string, sender: { id: string; name: string } | null) =>
        sql.withTransaction(Effect.gen(function*() {
          const now = new Date(yield* Clock.currentTimeMillis)
          const moved = yield* moveHead(sql, row.id, row.head_sha, head, now)
          if (moved.length === 0) return
          const fresh = Option.getOrThrow(yield* withSql(loadById(row.id)))
          yield* withSql(publishPullRequestEvent(PullRequestUpdated, repo, fresh, sender, {
            before: row.head_sha,
            after: head,
            changes: ["commits"]
          }))
        })).pipe(Effect.orDie)

      /** Owners of the changed files (CODEOWNERS of the target branch) are requested as reviewers. */
      const requestCodeOwners = (prId: string, paths: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const found = yield* pulls.findById(prId)
          if (Option.isNone(found) || paths.length === 0) return
          const { owners } = yield* codeOwners.forPaths(found.value.repo, found.value.row.target_branch, paths)
          // Owners come as usernames (without `@`), `@org/team` (no teams here) or e-mail addresses.
          const handles = owners.filter((owner) => !owner.includes("@"))
          const emails = owners.filter((owner) => !owner.startsWith("@") && owner.includes("@")).map((email) =>
            email.toLowerCase()
          )
          const byEmail = emails.length === 0
            ? []
            : yield* memberUsernamesByEmail(sql, found.value.repo.orgId, emails).pipe(Effect.orDie)
          const usernames = [...handles, ...byEmail]
          if (usernames.length === 0) return
          yield* reviews.request(found.value, null, usernames, "codeowners").pipe(Effect.orDie)
        })

      const stateOf = Effect.fnUntraced(function*(repo: RepoRecord, row: PrRow): Effect.fn.Return<MergeableState> {
        if (row.mergeable === null) return "unknown"
        if (row.mergeable === false) return "dirty"
        const rules = yield* BranchRules
        const { full } = yield* rules.mergePolicy(repo, row.target_branch, null)
        const checks = evaluateChecks({
          policy: { ...full, requireSignedCommits: false },
          authorId: row.author_id,
          headSha: row.head_sha,
          reviews: yield* withSql(gatherReviews(row.id)),
          mergeable: row.mergeable,
          conflicts: row.conflicts,
          statuses: yield* rules.latestStatuses(repo.id, row.head_sha),
          unsignedCommits: [],
          codeOwners: yield* withSql(gatherCodeOwners(row.id)),
          strategy: undefined
        })
        return allPassed(checks) ? "clean" : "blocked"
      })

      const refresh = Effect.fn("Mergeability.refresh")(
        function*(prId: string, sender: { readonly id: string; readonly name: string } | null) {
          const found = yield* pulls.findById(prId)
          if (Option.isNone(found) || !isOpen(found.value.row)) return Option.map(found, (f) => f.row)
          const { repo, row } = found.value
          const changedPaths = yield* cache.use(repo, (synced) =>
            Effect.gen(function*() {
              const head = refOf(synced, row.source_branch)
              const target = refOf(synced, row.target_branch)
              if (Option.isNone(head) || Option.isNone(target)) return undefined
              if (head.value !== row.head_sha) yield* recordHead(repo, row, head.value, sender)
              const current = Option.getOrThrow(yield* withSql(loadById(row.id)))
              if (
                current.mergeable !== null && current.base_sha === target.value && current.head_sha === head.value
              ) return undefined
              const result = yield* testMerge(cache, synced, target.value, head.value).pipe(Effect.orDie)
              yield* recordTestMerge(sql, row.id, head.value, { ...result, baseSha: target.value }).pipe(Effect.orDie)
              return yield* changedFiles({ dir: synced.dir, env: {} }, target.value, head.value).pipe(Effect.orDie)
            }))
          if (changedPaths !== undefined) yield* requestCodeOwners(row.id, changedPaths)
          const updated = Option.getOrThrow(yield* withSql(loadById(row.id)))
          const state = yield* stateOf(repo, updated)
          if (state !== updated.mergeable_state) {
            yield* setMergeableState(sql, row.id, state).pipe(Effect.orDie)
          }
          return Option.some({ ...updated, mergeable_state: state })
        }
      )

      return Mergeability.of({ refresh })
    })
  )
}
