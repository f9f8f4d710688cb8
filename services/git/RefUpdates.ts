import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import {
  CreateEvent,
  DeleteEvent,
  isValidBranchName,
  PushEvent,
  type PushEventData
} from "../../schemas/git/Repositories.ts"
import { type NewDomainEvent, publishAll } from "../events/Events.ts"
import { type GitCommandError, gitText } from "./GitProcess.ts"
import { describeCommit, sharedWalk, type WalkedCommit } from "./NewCommits.ts"
import { PackStore } from "./PackStore.ts"
import { ZERO_SHA } from "./PktLine.ts"
import { PackRejected, type Quarantine, verifyConnected } from "./Quarantine.ts"
import { deleteRef, storedRefs, upsertRef } from "./RefRows.ts"
import { type GitStorageError, RepoCache } from "./RepoCache.ts"
import type { RepoRecord } from "./Repositories.ts"
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

/** Commits listed in one push event (GitHub lists 20; the rest are reachable by `after`). */
const MAX_EVENT_COMMITS = 100

const refNameProblem = (name: string): string | undefined => {
  if (!name.startsWith("refs/")) return "funny refname"
  if (name.startsWith("refs/pull/")) return "refs/pull/ is reserved"
  return isValidBranchName(name.slice("refs/".length)) && name.split("/").length >= 3 ? undefined : "funny refname"
}

/** The commit an annotated tag points to (itself for a lightweight tag), or null. */
const peel = (dir: string, env: Readonly<Record<string, string>>, sha: string) =>
  gitText({ gitDir: dir, env, args: ["rev-parse", "--verify", "-q", `${sha}^{commit}`] }).pipe(
    Effect.map((text): string | null => text.trim()),
    Effect.orElseSucceed(() => null)
  )

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
}>()("canopy/git/RefUpdates") {
  static readonly layer = Layer.effect(
    RefUpdates,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const packs = yield* PackStore
      const cache = yield* RepoCache

      const apply = Effect.fn("RefUpdates.apply")(function*(input: RefUpdateInput) {
        const { repo, dir, quarantine, pusher } = input
        const env = quarantine?.env ?? {}
        if (repo.archived) {
          return input.commands.map((command) => ({ name: command.name, ok: false, reason: "repository is archived" }))
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
        const tips = candidates.filter((c) => c.newSha !== ZERO_SHA).map((c) => c.newSha)
        const check = input.check ?? (yield* RefUpdateCheck)
        // One walk per new tip gives the check (branch protection verifies every new commit)
        // and the push events (the newest commits) the same objects.
        const walks = yield* Effect.forEach(
          candidates,
          (command) => command.newSha === ZERO_SHA ? Effect.succeed(undefined) : sharedWalk(dir, env, command.newSha)
        )
        // The per-ref checks, the events' commit lists and the connectivity walk do not depend
        // on each other, so they run side by side; started in that order, the shared walks run
        // while the connectivity walk's git starts (a push's check has its queries from `prepare`).
        // A check that broke on objects the connectivity walk finds missing is moot: the push
        // is rejected for those.
        const [checked, prepared, connected] = yield* Effect.all([
          Effect.forEach(
            candidates,
            (command, index) =>
              Effect.exit(check({
                repo,
                command,
                pusher,
                dir,
                env,
                newCommits: walks[index]?.all ?? Effect.succeed([])
              })),
            { concurrency: "unbounded" }
          ),
          Effect.forEach(
            candidates,
            (command, index) => eventsFor(input, command, walks[index]?.newest ?? Effect.succeed([])),
            { concurrency: "unbounded" }
          ),
          Effect.exit(verifyConnected(dir, quarantine ?? { dir, env: {}, pack: undefined }, tips))
        ], { concurrency: "unbounded" })
        yield* connected
        for (const [index, command] of candidates.entries()) {
          const reason = yield* checked[index]
          if (reason !== undefined) verdicts.set(command.name, reason)
        }
        const refused = (name: string) => verdicts.get(name)
        if (input.atomic && verdicts.size > 0) {
          return input.commands.map((c) => ({
            name: c.name,
            ok: false,
            reason: refused(c.name) ?? "atomic push failed"
          }))
        }
        const accepted = input.commands.filter((c) => !verdicts.has(c.name))
        if (quarantine?.pack !== undefined && quarantine.pack.objects > 0 && accepted.length > 0) {
          yield* packs.store(repo.id, quarantine.pack)
        }
        const events = prepared.flat()
        const peeled = new Map<string, string | null>()
        for (const command of accepted) {
          if (command.name.startsWith("refs/tags/") && command.newSha !== ZERO_SHA) {
            peeled.set(command.name, yield* peel(dir, env, command.newSha))
          }
        }

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
          for (const command of applied) {
            if (command.newSha === ZERO_SHA) {
              yield* deleteRef(sql, repo.id, command.name)
            } else {
              yield* upsertRef(sql, repo.id, command.name, command.newSha, peeled.get(command.name) ?? null)
            }
          }
          const appliedNames = new Set(applied.map((c) => c.name))
          yield* publishAll(events.filter((event) => appliedNames.has(event.ref)).map((event) => event.event)).pipe(
            Effect.provideService(SqlClient.SqlClient, sql)
          )
          // As on GitHub: the first branch pushed into a repository without branches becomes the
          // default when the configured default branch was not among those pushed.
          const hadBranches = rows.some((row) => row.name.startsWith("refs/heads/"))
          const pushedBranches = applied.filter((c) => c.name.startsWith("refs/heads/") && c.newSha !== ZERO_SHA)
          const defaultRef = `refs/heads/${repo.defaultBranch}`
          const newDefault = !hadBranches && pushedBranches.length > 0 && !pushedBranches.some((c) =>
              c.name === defaultRef
            )
            ? pushedBranches[0].name.slice("refs/heads/".length)
            : repo.defaultBranch
          if (applied.length > 0) {
            yield* recordRefUpdate(sql, repo.id, newDefault)
          }
          if (input.alongside !== undefined && applied.length === input.commands.length) yield* input.alongside
          return "committed" as const
        })).pipe(Effect.orDie)

        if (quarantine?.pack !== undefined && quarantine.pack.objects > 0 && accepted.length > 0) {
          yield* cache.adopt(repo.id, quarantine.pack.packPath, quarantine.pack.idxPath, quarantine.pack.name)
        }
        return input.commands.map((command): RefResult => {
          const reason = refused(command.name) ?? (outcome === "rolled back" ? "atomic push failed" : undefined)
          return reason === undefined ? { name: command.name, ok: true } : { name: command.name, ok: false, reason }
        })
      })

      /** `push` (and `create`/`delete`) events of one accepted command, computed before the transaction. */
      const eventsFor = (
        input: RefUpdateInput,
        command: RefCommand,
        walk: Effect.Effect<ReadonlyArray<WalkedCommit>, GitCommandError>
      ) =>
        Effect.gen(function*() {
          const { pusher, repo } = input
          const repository = { id: repo.id, name: repo.name, fullName: `${repo.orgSlug}/${repo.slug}` }
          const timestamp = new Date().toISOString()
          // GitHub lists the newest commits of a push, oldest first.
          const newest = yield* Effect.orElseSucceed(walk, () => [])
          const commits: PushEventData["commits"] = newest.slice(0, MAX_EVENT_COMMITS).reverse().map(describeCommit)
          const push: PushEventData = {
            repository,
            sender: pusher,
            ref: command.name,
            before: command.oldSha,
            after: command.newSha,
            commits,
            timestamp
          }
          const out: Array<{ ref: string; event: NewDomainEvent }> = [
            { ref: command.name, event: PushEvent.make(repo.orgId, push) }
          ]
          if (command.oldSha === ZERO_SHA || command.newSha === ZERO_SHA) {
            const data = {
              repository,
              sender: pusher,
              ref: command.name.replace(/^refs\/(heads|tags)\//, ""),
              refType: command.name.startsWith("refs/tags/") ? "tag" as const : "branch" as const,
              sha: command.newSha === ZERO_SHA ? command.oldSha : command.newSha,
              timestamp
            }
            const kind = command.oldSha === ZERO_SHA ? CreateEvent : DeleteEvent
            out.push({ ref: command.name, event: kind.make(repo.orgId, data) })
          }
          return out
        })

      return RefUpdates.of({ apply })
    })
  )
}
