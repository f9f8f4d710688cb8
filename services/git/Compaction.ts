import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"
import { runGit } from "./GitProcess.ts"
import { PackStore } from "./PackStore.ts"
import { indexObjectCount } from "./Quarantine.ts"
import { GitStorageError, RepoCache } from "./RepoCache.ts"
import { Repositories } from "./Repositories.ts"

export interface CompactionResult {
  readonly compacted: boolean
  readonly packsBefore: number
  readonly packsAfter: number
}

export interface StorageUsage {
  readonly packBytes: number
  readonly lfsBytes: number
}

const failed = (message: string) => (cause: unknown) => new GitStorageError({ message, cause })

/**
 * Repository maintenance, run by the repository entity (one at a time per repository):
 *
 * - `compact`: when a repository has at least `minPacks` packs (every push adds one),
 *   `git repack -a -d -k` over the runner's synced copy writes one pack with fresh deltas
 *   (keeping unreachable objects: a push may be about to reference them), which is uploaded
 *   and swapped for exactly the packs it was made from in one transaction. Packs pushed
 *   meanwhile stay listed. The cache lock is held throughout so no sync drops the new pack
 *   before it is recorded.
 * - `recount`: recomputes `pack_bytes` and `lfs_bytes` from the rows (the writers keep
 *   them current; this repairs any drift).
 * - `warmUp`: syncs this runner's cached copy ahead of the first clone.
 */
export class Compaction extends Context.Service<Compaction, {
  compact(repoId: string, minPacks: number): Effect.Effect<CompactionResult, GitStorageError>
  recount(repoId: string): Effect.Effect<StorageUsage>
  warmUp(repoId: string): Effect.Effect<void, GitStorageError>
  /** Bytes of every live repository of an organization (packs + LFS), for quotas. */
  organizationUsage(orgId: string): Effect.Effect<StorageUsage>
}>()("canopy/git/Compaction") {
  static readonly layer = Layer.effect(
    Compaction,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const cache = yield* RepoCache
      const packs = yield* PackStore
      const repos = yield* Repositories
      const none: CompactionResult = { compacted: false, packsBefore: 0, packsAfter: 0 }

      const compact = Effect.fn("Compaction.compact")(function*(repoId: string, minPacks: number) {
        const repo = yield* repos.findById(repoId)
        if (Option.isNone(repo)) return none
        const listed = yield* packs.list(repoId)
        if (listed.length < Math.max(2, minPacks)) {
          return { ...none, packsBefore: listed.length, packsAfter: listed.length }
        }
        return yield* cache.exclusive(repo.value, (synced) =>
          Effect.gen(function*() {
            const replaced = (yield* packs.list(repoId)).map((pack) => pack.name)
            yield* runGit({ gitDir: synced.dir, args: ["repack", "-a", "-d", "-k", "-q", "--no-write-bitmap-index"] })
              .pipe(Effect.mapError(failed("git repack failed")))
            const packDir = Path.join(synced.dir, "objects", "pack")
            const files = yield* Effect.tryPromise({ try: () => FsP.readdir(packDir), catch: failed("list packs") })
            const fresh = files.map((file) => /^(pack-[0-9a-f]{40})\.pack$/.exec(file)?.[1])
              .filter((name): name is string => name !== undefined && !replaced.includes(name))
            if (fresh.length !== 1) {
              return { compacted: false, packsBefore: replaced.length, packsAfter: replaced.length }
            }
            const name = fresh[0]
            const packPath = Path.join(packDir, `${name}.pack`)
            const idxPath = Path.join(packDir, `${name}.idx`)
            const [pack, idx] = yield* Effect.tryPromise({
              try: () => Promise.all([FsP.stat(packPath), FsP.stat(idxPath)]),
              catch: failed("stat the new pack")
            })
            const objects = yield* Effect.tryPromise({ try: () => indexObjectCount(idxPath), catch: failed("read") })
            yield* packs.replace(repoId, replaced, {
              name,
              packPath,
              idxPath,
              objects,
              packBytes: pack.size,
              idxBytes: idx.size
            })
            const after = yield* packs.list(repoId)
            return { compacted: true, packsBefore: replaced.length, packsAfter: after.length }
          }))
      })

      const recount = Effect.fn("Compaction.recount")(function*(repoId: string) {
        const rows = yield* sql<{ pack_bytes: string; lfs_bytes: string }>`
          UPDATE repositories SET
            pack_bytes = (SELECT coalesce(sum(pack_bytes + idx_bytes), 0) FROM repo_packs WHERE repo_id = ${repoId}),
            lfs_bytes = (SELECT coalesce(sum(size), 0) FROM lfs_objects WHERE repo_id = ${repoId})
          WHERE id = ${repoId}
          RETURNING pack_bytes, lfs_bytes`.pipe(Effect.orDie)
        return rows.length === 0
          ? { packBytes: 0, lfsBytes: 0 }
          : { packBytes: Number(rows[0].pack_bytes), lfsBytes: Number(rows[0].lfs_bytes) }
      })

      const warmUp = Effect.fn("Compaction.warmUp")(function*(repoId: string) {
        const repo = yield* repos.findById(repoId)
        if (Option.isSome(repo)) yield* cache.use(repo.value, () => Effect.void)
      })

      const organizationUsage = Effect.fn("Compaction.organizationUsage")(function*(orgId: string) {
        const rows = yield* sql<{ pack_bytes: string; lfs_bytes: string }>`
          SELECT coalesce(sum(pack_bytes), 0) AS pack_bytes, coalesce(sum(lfs_bytes), 0) AS lfs_bytes
          FROM repositories WHERE org_id = ${orgId} AND deleted_at IS NULL`.pipe(Effect.orDie)
        return { packBytes: Number(rows[0].pack_bytes), lfsBytes: Number(rows[0].lfs_bytes) }
      })

      return Compaction.of({ compact, recount, warmUp, organizationUsage })
    })
  )
}
