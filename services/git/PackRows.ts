import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { decodeRows, Int8 } from "../platform/Rows.ts"
import type { QuarantinedPack } from "./Quarantine.ts"
import { addPackBytes, freePackBytes } from "./RepositoryRows.ts"

/*
 * The `repo_packs` table (the packs of a repository stored in the BlobStore): its rows and
 * every statement on it. The writes move `repositories.pack_bytes` in the same statement or
 * transaction.
 */

/** A listed pack and its size (`.pack` + `.idx`). */
const PackSize = Schema.Struct({ name: Schema.String, bytes: Int8 })
export type PackSize = typeof PackSize.Type

const PackFiles = Schema.Struct({
  name: Schema.String,
  pack_bytes: Int8,
  idx_bytes: Int8
})

const FreedBytes = Schema.Struct({ bytes: Int8 })

/** Lists a pack and adds its bytes to the repository's, in one statement; a pack listed already changes nothing. */
export const insertPack = (sql: SqlClient.SqlClient, repoId: string, pack: QuarantinedPack) =>
  sql`
    WITH inserted AS (
      INSERT INTO repo_packs (repo_id, name, pack_bytes, idx_bytes, object_count)
      VALUES (${repoId}, ${pack.name}, ${pack.packBytes}, ${pack.idxBytes}, ${pack.objects})
      ON CONFLICT DO NOTHING
      RETURNING pack_bytes + idx_bytes AS bytes
    )
    ${addPackBytes(sql, repoId, sql`coalesce((SELECT bytes FROM inserted), 0)`)}`

/**
 * Unlists the packs named `names`, except `keep`, and takes their bytes off the repository's
 * (two statements: run it in a transaction).
 */
export const removePacks = (sql: SqlClient.SqlClient, repoId: string, names: ReadonlyArray<string>, keep: string) =>
  Effect.gen(function*() {
    const removed = yield* sql`
      DELETE FROM repo_packs WHERE repo_id = ${repoId} AND name IN ${sql.in(names)} AND name <> ${keep}
      RETURNING pack_bytes + idx_bytes AS bytes`.pipe(decodeRows(FreedBytes))
    const freed = removed.reduce((sum, row) => sum + row.bytes, 0)
    yield* freePackBytes(sql, repoId, freed)
  })

/** A repository's packs, oldest first, with their sizes. */
export const packSizes = (sql: SqlClient.SqlClient, repoId: string) =>
  sql`SELECT name, pack_bytes + idx_bytes AS bytes FROM repo_packs WHERE repo_id = ${repoId} ORDER BY created_at`.pipe(
    decodeRows(PackSize)
  )

/** A repository's packs with their file sizes (what a cached copy must hold). */
export const packFiles = (sql: SqlClient.SqlClient, repoId: string) =>
  sql`SELECT name, pack_bytes, idx_bytes FROM repo_packs WHERE repo_id = ${repoId}`.pipe(decodeRows(PackFiles))
