import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { BlobStore } from "../storage/BlobStore.ts"
import { insertPack, packSizes, removePacks } from "./PackRows.ts"
import type { QuarantinedPack } from "./Quarantine.ts"
import { fileStream, GitStorageError, packKey } from "./RepoCache.ts"

/**
 * The durable half of a repository's objects: immutable `.pack` + `.idx` files in the
 * BlobStore under `repos/<repoId>/packs/`, listed in `repo_packs`. A pack is uploaded
 * first and recorded second, so a listed pack is always complete; refs name its objects
 * only after it is listed (see `RefUpdates`). `repositories.pack_bytes` moves in the
 * same transaction as the rows.
 */
export class PackStore extends Context.Service<PackStore, {
  store(repoId: string, pack: QuarantinedPack): Effect.Effect<void, GitStorageError>
  /**
   * Replaces `replaced` packs by `pack` in one transaction (compaction). Rows that are no
   * longer listed have their files deleted from the BlobStore afterwards.
   */
  replace(
    repoId: string,
    replaced: ReadonlyArray<string>,
    pack: QuarantinedPack
  ): Effect.Effect<void, GitStorageError>
  list(repoId: string): Effect.Effect<ReadonlyArray<{ readonly name: string; readonly bytes: number }>, GitStorageError>
}>()("canopy/git/PackStore") {
  static readonly layer = Layer.effect(
    PackStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const blobs = yield* BlobStore
      const failed = (message: string) => (cause: unknown) => new GitStorageError({ message, cause })

      const upload = (repoId: string, pack: QuarantinedPack) =>
        Effect.all([
          blobs.put(packKey(repoId, pack.name, "pack"), fileStream(pack.packPath), {
            contentType: "application/x-git-packed-objects"
          }),
          blobs.put(packKey(repoId, pack.name, "idx"), fileStream(pack.idxPath), {
            contentType: "application/x-git-packed-objects-toc"
          })
        ], { concurrency: 2 }).pipe(Effect.mapError(failed(`upload of ${pack.name} failed`)))

      const store = Effect.fn("PackStore.store")(function*(repoId: string, pack: QuarantinedPack) {
        yield* upload(repoId, pack)
        yield* insertPack(sql, repoId, pack).pipe(Effect.mapError(failed("recording a pack failed")))
      })

      const replace = Effect.fn("PackStore.replace")(
        function*(repoId: string, replaced: ReadonlyArray<string>, pack: QuarantinedPack) {
          yield* upload(repoId, pack)
          yield* sql.withTransaction(Effect.gen(function*() {
            yield* removePacks(sql, repoId, replaced, pack.name)
            yield* insertPack(sql, repoId, pack)
          })).pipe(Effect.mapError(failed("swapping compacted packs failed")))
          // Runners still serving from the old files have local copies; the BlobStore no longer needs them.
          for (const name of replaced.filter((name) => name !== pack.name)) {
            yield* blobs.delete(packKey(repoId, name, "pack")).pipe(Effect.ignore)
            yield* blobs.delete(packKey(repoId, name, "idx")).pipe(Effect.ignore)
          }
        }
      )

      const list = (repoId: string) => packSizes(sql, repoId).pipe(Effect.mapError(failed("listing packs failed")))

      return PackStore.of({ store, replace, list })
    })
  )
}
