import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { BlobStore } from "../platform/BlobStore.ts"
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

      const insertRow = (repoId: string, pack: QuarantinedPack) =>
        sql`
          WITH inserted AS (
            INSERT INTO repo_packs (repo_id, name, pack_bytes, idx_bytes, object_count)
            VALUES (${repoId}, ${pack.name}, ${pack.packBytes}, ${pack.idxBytes}, ${pack.objects})
            ON CONFLICT DO NOTHING
            RETURNING pack_bytes + idx_bytes AS bytes
          )
          UPDATE repositories SET pack_bytes = pack_bytes + coalesce((SELECT bytes FROM inserted), 0)
          WHERE id = ${repoId}`

      const store = Effect.fn("PackStore.store")(function*(repoId: string, pack: QuarantinedPack) {
        yield* upload(repoId, pack)
        yield* insertRow(repoId, pack).pipe(Effect.mapError(failed("recording a pack failed")))
      })

      const replace = Effect.fn("PackStore.replace")(
        function*(repoId: string, replaced: ReadonlyArray<string>, pack: QuarantinedPack) {
          yield* upload(repoId, pack)
          yield* sql.withTransaction(Effect.gen(function*() {
            const removed = yield* sql<{ bytes: string }>`
              DELETE FROM repo_packs WHERE repo_id = ${repoId} AND name IN ${sql.in(replaced)} AND name <> ${pack.name}
              RETURNING pack_bytes + idx_bytes AS bytes`
            const freed = removed.reduce((sum, row) => sum + Number(row.bytes), 0)
            yield* sql`UPDATE repositories SET pack_bytes = pack_bytes - ${freed} WHERE id = ${repoId}`
            yield* insertRow(repoId, pack)
          })).pipe(Effect.mapError(failed("swapping compacted packs failed")))
          // Runners still serving from the old files have local copies; the BlobStore no longer needs them.
          for (const name of replaced.filter((name) => name !== pack.name)) {
            yield* blobs.delete(packKey(repoId, name, "pack")).pipe(Effect.ignore)
            yield* blobs.delete(packKey(repoId, name, "idx")).pipe(Effect.ignore)
          }
        }
      )

      const list = (repoId: string) =>
        sql<{ name: string; bytes: string }>`
          SELECT name, pack_bytes + idx_bytes AS bytes FROM repo_packs WHERE repo_id = ${repoId} ORDER BY created_at`
          .pipe(
            Effect.map((rows) => rows.map((row) => ({ name: row.name, bytes: Number(row.bytes) }))),
            Effect.mapError(failed("listing packs failed"))
          )

      return PackStore.of({ store, replace, list })
    })
  )
}
