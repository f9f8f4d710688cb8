import { Context, Effect, Layer, Option } from "effect"
import { Sharding } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { isValidBranchName } from "../../schemas/git/Repositories.ts"
import { publishAll } from "../events/Events.ts"
import type { GitCommandError } from "./GitProcess.ts"
import { GitWork } from "./GitWork.ts"
import type { WalkedCommit } from "./NewCommits.ts"
import { PackStore } from "./PackStore.ts"
import { ZERO_SHA } from "./PktLine.ts"
import { defaultBranchAfter, pushEvents } from "./PushEvents.ts"
import { walkPush } from "./PushWalk.ts"
import { PackRejected, type Quarantine, verifyConnected } from "./Quarantine.ts"
import { deleteRefs, storedRefs, upsertRefs } from "./RefRows.ts"
import { type GitStorageError, RepoCache } from "./RepoCache.ts"
import type { RepoRecord } from "./Repositories.ts"
import { COMPACT_AT_PACKS, nudgeCompaction, ServerCommitPacksBeforeCompaction } from "./RepositoryProtocol.ts"
import { lockForRefUpdate, recordRefUpdate } from "./RepositoryRows.ts"
import { storageStanding } from "./StorageQuota.ts"

/** One requested ref change; `ZERO_SHA` as old means create, as new means delete. */
export interface RefCommand {
  readonly name: string
  readonly oldSha: string
  readonly newSha: string
}

/** The outcome for one ref: applied, or refused with git's `ng` reason. */
export interface RefResult {
  readonly name: string
  readonly ok: boolean
  readonly reason?: string | undefined
}

/** Who moves the refs (the key's user; `null` for the server itself). */
export interface Pusher {
  readonly id: string
  readonly name: string
  readonly email: string
}

export interface RefUpdateInput {
  readonly repo: RepoRecord
  /** The repository's cached folder, synced by `RepoCache.use`. */
  readonly dir: string
  /** New objects not yet stored (a push's pack, a merge's commits), or none. */
  readonly quarantine: Quarantine | undefined
  readonly commands: ReadonlyArray<RefCommand>
  /** All refs or none (git's `atomic` capability); otherwise each ref on its own. */
  readonly atomic: boolean
  readonly pusher: Pusher | null
  /** The check prepared for this update (`RefUpdateCheckFn.prepare`); the context's `RefUpdateCheck` otherwise. */
  readonly check?: RefUpdateCheckFn | undefined
  /** A server-side commit (merge, suggestion, …), not a push: its small pack is compacted less eagerly. */
  readonly serverCommit?: boolean | undefined
  /**
   * Writes that must commit with the refs (a merge marks its pull request merged): run in the
   * compare-and-swap's transaction once every command applied, so both commit or neither does.
   */
  readonly alongside?: Effect.Effect<void> | undefined
}

/**
 * The hook every ref update passes through before it is applied (branch protection plugs
 * in here): returns the reason to refuse the update, or `undefined`. Runs with the
 * quarantine's objects visible (`env`), before the compare-and-swap, which makes its
 * verdict hold: the ref is only moved if it still has the `oldSha` that was checked.
 */
export type RefUpdateCheckFn =
  & ((input: {
    readonly repo: RepoRecord
    readonly command: RefCommand
    readonly pusher: Pusher | null
    readonly dir: string
    readonly env: Readonly<Record<string, string>>
    /** The update's new commits (all, newest first): one git walk per ref, shared with the push events. */
    readonly newCommits: Effect.Effect<ReadonlyArray<WalkedCommit>, GitCommandError>
  }) => Effect.Effect<string | undefined>)
  & {
    /**
     * Starts what the check can look up from a push's commands alone (branch protection's
     * queries), while the caller still receives the objects; returns the check for that push.
     */
    readonly prepare?: (input: {
      readonly repo: RepoRecord
      readonly commands: ReadonlyArray<RefCommand>
      readonly pusher: Pusher | null
    }) => Effect.Effect<RefUpdateCheckFn>
  }

export const RefUpdateCheck = Context.Reference<RefUpdateCheckFn>("canopy/git/RefUpdateCheck", {
  defaultValue: () => () => Effect.succeed(undefined)
})

const refNameProblem = (name: string): string | undefined => {
  if (!name.startsWith("refs/")) return "funny refname"
  if (name.startsWith("refs/pull/")) return "refs/pull/ is reserved"
  return isValidBranchName(name.slice("refs/".length)) && name.split("/").length >= 3 ? undefined : "funny refname"
}

/** What an update did: each ref's outcome, and what the pusher should be told (git shows it as "remote: …"). */
export interface RefUpdateOutcome {
  readonly results: ReadonlyArray<RefResult>
  readonly notices: ReadonlyArray<string>
}

/** Branch checks (a git process each when a rule matches) running at once in one push. */
const CHECK_CONCURRENCY = 4

/**
 * The one path by which refs move (pushes, pull request merges and the source branch
 * deletion after them in `services/pulls/Merger.ts`, suggestion commits): objects in, a
 * check per ref, refs compared-and-swapped in one Postgres transaction, domain events out
 * in that same transaction.
 *
 * 1. An archived repository refuses everything.
 * 2. Every new tip must be connected (its objects present in the repository or the
 *    quarantine); the hook (`RefUpdateCheck`) may refuse single refs.
 * 3. The quarantined pack is stored (BlobStore, then `repo_packs`) before any ref names it.
 * 4. One transaction locks the repository row, compares each ref with its expected old
 *    value (a mismatch is `ng <ref> fetch first`, so of two racing pushes exactly one
 *    wins), applies the accepted ones (all or none when `atomic`) and publishes `push`,
 *    `create` and `delete` events.
 */
export class RefUpdates extends Context.Service<RefUpdates, {
  apply(input: RefUpdateInput): Effect.Effect<ReadonlyArray<RefResult>, PackRejected | GitStorageError>
  /** `apply`, with what the pusher should be told (a push's progress channel). */
  update(input: RefUpdateInput): Effect.Effect<RefUpdateOutcome, PackRejected | GitStorageError>
}>()("canopy/git/RefUpdates") {
  static readonly layer = Layer.effect(
    RefUpdates,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const packs = yield* PackStore
      const cache = yield* RepoCache
      const work = yield* GitWork
      // Every stored pack nudges the repository's compaction, whoever moved the refs. Without
      // a cluster (tools, some tests) there is no entity to nudge.
      const sharding = yield* Effect.serviceOption(Sharding.Sharding)
      const serverCommitPacks = yield* ServerCommitPacksBeforeCompaction
      const nudge = (repoId: string, serverCommit: boolean) =>
        Option.match(sharding, {
          onNone: () => Effect.void,
          onSome: (service) =>
            nudgeCompaction(repoId, serverCommit ? serverCommitPacks : COMPACT_AT_PACKS).pipe(
              Effect.provideService(Sharding.Sharding, service)
            )
        })

      const update = Effect.fn("RefUpdates.update")(function*(input: RefUpdateInput) {
        const { repo, dir, quarantine, pusher } = input
        const env = quarantine?.env ?? {}
        if (repo.archived) {
          const results = input.commands.map((command) => ({
            name: command.name,
            ok: false,
            reason: "repository is archived"
          }))
          return { results, notices: [] } satisfies RefUpdateOutcome
        }
        const verdicts = new Map<string, string>()
        for (const command of input.commands) {
          const problem = refNameProblem(command.name)
          if (problem !== undefined) verdicts.set(command.name, problem)
        }
        // GUIDE §16: at 100% of the plan's storage every write is refused here, the one path all
        // writers take (push, merge, suggestion and AI commits); deletions still pass.
        if (input.commands.some((c) => c.newSha !== ZERO_SHA && !verdicts.has(c.name))) {
          const storage = yield* storageStanding(repo.orgId).pipe(Effect.provideService(SqlClient.SqlClient, sql))
          if (storage.blocked) {
            for (const command of input.commands) {
              if (command.newSha !== ZERO_SHA && !verdicts.has(command.name)) {
                verdicts.set(command.name, "storage quota exceeded")
              }
            }
          }
        }
        const candidates = input.commands.filter((c) => !verdicts.has(c.name))
        const tips = [...new Set(candidates.filter((c) => c.newSha !== ZERO_SHA).map((c) => c.newSha))]
        const check = input.check ?? (yield* RefUpdateCheck)
        // One walk of the whole push (not one per ref) gives the checks every new commit of
        // their ref, the events their newest, and the tags their peeled commits; it and the
        // checks run beside the connectivity walk. A walk or check that broke on objects the
        // connectivity walk finds missing is moot: the push is rejected for those.
        const [walked, connected] = yield* Effect.all([
          Effect.exit(Effect.gen(function*() {
            const walk = yield* work.heavy(walkPush(dir, env, tips))
            const checked = yield* Effect.forEach(
              candidates,
              (command) =>
                Effect.exit(check({
                  repo,
                  command,
                  pusher,
                  dir,
                  env,
                  newCommits: command.newSha === ZERO_SHA ? Effect.succeed([]) : walk.all(command.newSha)
                })),
              { concurrency: CHECK_CONCURRENCY }
            )
            return { walk, checked }
          })),
          Effect.exit(work.heavy(verifyConnected(dir, quarantine ?? { dir, env: {}, pack: undefined }, tips)))
        ], { concurrency: 2 })
        yield* connected
        const { checked, walk } = yield* Effect.mapError(
          walked,
          (error) => new PackRejected({ reason: `walking the pushed commits failed: ${error.message}` })
        )
        for (const [index, command] of candidates.entries()) {
          const reason = yield* checked[index]
          if (reason !== undefined) verdicts.set(command.name, reason)
        }
        const refused = (name: string) => verdicts.get(name)
        if (input.atomic && verdicts.size > 0) {
          const results = input.commands.map((c) => ({
            name: c.name,
            ok: false,
            reason: refused(c.name) ?? "atomic push failed"
          }))
          return { results, notices: [] } satisfies RefUpdateOutcome
        }
        const accepted = input.commands.filter((c) => !verdicts.has(c.name))
        if (quarantine?.pack !== undefined && quarantine.pack.objects > 0 && accepted.length > 0) {
          yield* packs.store(repo.id, quarantine.pack)
        }
        const notices: Array<string> = []

        const outcome = yield* sql.withTransaction(Effect.gen(function*() {
          // Archived or trashed since the request began: nothing moves.
          const state = yield* lockForRefUpdate(sql, repo.id)
          if (Option.isNone(state) || state.value.archived || state.value.deleted) {
            for (const command of accepted) verdicts.set(command.name, "repository is archived or deleted")
            return "rolled back" as const
          }
          const rows = yield* storedRefs(sql, repo.id)
          const current = new Map(rows.map((row) => [row.name, row.sha]))
          const stale = accepted.filter((c) => (current.get(c.name) ?? ZERO_SHA) !== c.oldSha)
          for (const command of stale) verdicts.set(command.name, "fetch first")
          if (input.atomic && stale.length > 0) return "rolled back" as const
          const applied = accepted.filter((c) => !verdicts.has(c.name))
          // Every ref of the push in one statement each for deletions and writes.
          yield* deleteRefs(sql, repo.id, applied.filter((c) => c.newSha === ZERO_SHA).map((c) => c.name))
          yield* upsertRefs(
            sql,
            repo.id,
            applied.filter((c) => c.newSha !== ZERO_SHA).map((c) => ({
              name: c.name,
              sha: c.newSha,
              peeled: c.name.startsWith("refs/tags/") ? walk.peeled.get(c.newSha) ?? null : null
            }))
          )
          yield* publishAll(pushEvents(repo, pusher, applied, walk)).pipe(
            Effect.provideService(SqlClient.SqlClient, sql)
          )
          const branchesBefore = new Set(
            rows.filter((row) => row.name.startsWith("refs/heads/")).map((row) => row.name)
          )
          const newDefault = defaultBranchAfter(repo.defaultBranch, branchesBefore, applied)
          if (newDefault !== repo.defaultBranch) {
            notices.push(
              `Canopy: the default branch is now "${newDefault}" ("${repo.defaultBranch}", the configured one, ` +
                `was not pushed); change it with PATCH /api/v1/code/repos/${repo.orgSlug}/${repo.slug}.`
            )
          }
          if (applied.length > 0) {
            yield* recordRefUpdate(sql, repo.id, newDefault)
          }
          if (input.alongside !== undefined && applied.length === input.commands.length) yield* input.alongside
          return "committed" as const
        })).pipe(Effect.orDie)

        if (quarantine?.pack !== undefined && quarantine.pack.objects > 0 && accepted.length > 0) {
          yield* cache.adopt(repo.id, quarantine.pack.packPath, quarantine.pack.idxPath, quarantine.pack.name)
          yield* nudge(repo.id, input.serverCommit === true)
        }
        const results = input.commands.map((command): RefResult => {
          const reason = refused(command.name) ?? (outcome === "rolled back" ? "atomic push failed" : undefined)
          return reason === undefined ? { name: command.name, ok: true } : { name: command.name, ok: false, reason }
        })
        return { results, notices } satisfies RefUpdateOutcome
      })

      const apply = (input: RefUpdateInput) => Effect.map(update(input), (outcome) => outcome.results)

      return RefUpdates.of({ apply, update })
    })
  )
}
