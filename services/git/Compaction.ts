import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"
import { runGit } from "./GitProcess.ts"
import { GitWork, HEAVY_NICE } from "./GitWork.ts"
import { PackStore } from "./PackStore.ts"
import { indexObjectCount } from "./Quarantine.ts"
import { GitStorageError, RepoCache } from "./RepoCache.ts"
import { Repositories } from "./Repositories.ts"
import { organizationStorage, recountStorage } from "./RepositoryRows.ts"

export interface CompactionResult {
  readonly compacted: boolean
  readonly packsBefore: number
  readonly packsAfter: number
}

export interface StorageUsage {
  readonly packBytes: number
  readonly lfsBytes: number
}

/** Packs grow geometrically (each at least this many times the next smaller): git's `--geometric=2`. */
const GEOMETRIC_FACTOR = 2

/**
 * The packs to roll into one, git's `repack --geometric` split: the smallest packs up to the
 * point from which every pack is at least `GEOMETRIC_FACTOR` times the previous, then each
 * next pack as long as it is smaller than the factor times the rolled-up total. A repository
 * with one big pack and many small pushed ones rewrites only the small ones.
 */
export const rollUp = (listed: ReadonlyArray<{ readonly name: string; readonly bytes: number }>) => {
  const sorted = [...listed].sort((a, b) => a.bytes - b.bytes)
  let split = 0
  for (let i = sorted.length - 1; i > 0; i--) {
    if (sorted[i].bytes < GEOMETRIC_FACTOR * sorted[i - 1].bytes) {
      split = i + 1
      break
    }
  }
  let total = sorted.slice(0, split).reduce((sum, pack) => sum + pack.bytes, 0)
  while (split < sorted.length && sorted[split].bytes < GEOMETRIC_FACTOR * total) {
    total += sorted[split].bytes
    split++
  }
  return sorted.slice(0, split).map((pack) => pack.name)
}

const failed = (message: string) => (cause: unknown) => new GitStorageError({ message, cause })

/**
 * Repository maintenance, run by the repository entity (one at a time per repository):
 *
 * - `compact`: when a repository has at least `minPacks` packs (every push adds one),
 *   the small packs (git's geometric split, `rollUp`) are rewritten into one with
 *   `git pack-objects --stdin-packs` over the runner's synced copy (keeping unreachable
 *   objects: a push may be about to reference them; the big packs are not read), which is
 *   uploaded and swapped for exactly the packs it was made from in one transaction. Packs pushed
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
      const work = yield* GitWork
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
            const current = yield* packs.list(repoId)
            const replaced = rollUp(current)
            if (replaced.length < 2) {
              return { compacted: false, packsBefore: current.length, packsAfter: current.length }
            }
            // Only the rolled-up packs are read and rewritten (all their objects, reachable or
            // not: a push may be about to reference them); the big ones are left alone.
            const written = yield* work.heavy(runGit({
              gitDir: synced.dir,
              nice: HEAVY_NICE,
              args: ["pack-objects", "-q", "--stdin-packs", Path.join(synced.dir, "objects", "pack", "pack")],
              stdin: [
                ...replaced.map((name) => `${name}.pack\n`),
                ...current.filter((pack) => !replaced.includes(pack.name)).map((pack) => `^${pack.name}.pack\n`)
              ].join("")
            })).pipe(Effect.mapError(failed("git pack-objects failed")))
            const packDir = Path.join(synced.dir, "objects", "pack")
            const name = `pack-${written.toString("utf8").trim()}`
            if (!/^pack-[0-9a-f]{40}$/.test(name) || current.some((pack) => pack.name === name)) {
              return { compacted: false, packsBefore: current.length, packsAfter: current.length }
            }
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
            return { compacted: true, packsBefore: current.length, packsAfter: after.length }
          }))
      })

      const recount = Effect.fn("Compaction.recount")(function*(repoId: string) {
        const bytes = yield* recountStorage(sql, repoId).pipe(Effect.orDie)
        return Option.isNone(bytes)
          ? { packBytes: 0, lfsBytes: 0 }
          : { packBytes: bytes.value.pack_bytes, lfsBytes: bytes.value.lfs_bytes }
      })

      const warmUp = Effect.fn("Compaction.warmUp")(function*(repoId: string) {
        const repo = yield* repos.findById(repoId)
        if (Option.isSome(repo)) yield* cache.use(repo.value, () => Effect.void)
      })

      const organizationUsage = Effect.fn("Compaction.organizationUsage")(function*(orgId: string) {
        const bytes = yield* organizationStorage(sql, orgId).pipe(Effect.orDie)
        return { packBytes: bytes.pack_bytes, lfsBytes: bytes.lfs_bytes }
      })

      return Compaction.of({ compact, recount, warmUp, organizationUsage })
    })
  )
}
