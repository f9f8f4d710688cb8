import { Context, Effect, Schema } from "effect"
import { Entity, type Sharding } from "effect/cluster"
import { Rpc } from "effect/rpc"

/** Packs a repository may pile up (one per push) before the entity compacts them into one. */
export const COMPACT_AT_PACKS = 8

/**
 * Packs of server-side commits (merges, suggestion commits, …) before compaction: each is a
 * small pack, and a compaction is a full repack, so they may pile up more than pushes'.
 * A reference so a test can lower it.
 */
export const ServerCommitPacksBeforeCompaction = Context.Reference<number>(
  "canopy/git/ServerCommitPacksBeforeCompaction",
  { defaultValue: () => 32 }
)

export const CompactionResult = Schema.Struct({
  compacted: Schema.Boolean,
  packsBefore: Schema.Int,
  packsAfter: Schema.Int
})

export const StorageUsage = Schema.Struct({ packBytes: Schema.Number, lfsBytes: Schema.Number })

/** Compact when the repository has at least `minPacks` packs (idempotent). */
export const Compact = Rpc.make("Compact", {
  payload: { minPacks: Schema.Int },
  success: CompactionResult,
  error: Schema.String
})
/** Sync the hosting runner's cached copy (ahead of clones, after a failover). */
export const WarmUp = Rpc.make("WarmUp", { error: Schema.String })
/** Recompute the stored byte counts of packs and LFS objects. */
export const RecountStorage = Rpc.make("RecountStorage", { success: StorageUsage })

/**
 * One entity per repository (GUIDE §1, §8): serialises the maintenance that must not
 * overlap for one repository — compaction, cache warm-up, storage recounts — whichever
 * runner asks. The work itself is `Compaction` (services/git); pushes and fetches do not
 * go through the entity, they only nudge it after a push.
 */
export const Repository = Entity.make("Repository", [Compact, WarmUp, RecountStorage])

/**
 * After refs moved with a new pack (`RefUpdates`: pushes, merges, suggestion commits): ask
 * the repository's entity to compact if packs piled up. Fire and forget (the update already
 * succeeded); a failure is logged and the next update asks again.
 */
export const nudgeCompaction = (
  repoId: string,
  minPacks: number = COMPACT_AT_PACKS
): Effect.Effect<void, never, Sharding.Sharding> =>
  Effect.gen(function*() {
    const client = yield* Repository.client
    yield* client(repoId).Compact({ minPacks }).pipe(
      Effect.tapError((error) => Effect.logWarning("compaction failed", error)),
      Effect.ignore,
      Effect.forkDetach
    )
  })
