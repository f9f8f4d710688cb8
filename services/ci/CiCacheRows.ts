import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { decodeRows, Int8 } from "../platform/Rows.ts"

/** The statements of `ci_caches` (one row per repository and cache key). */

export const CacheRow = Schema.Struct({
  repo_id: Schema.String,
  key: Schema.String,
  blob_key: Schema.String,
  size: Int8
})
export type CacheRow = typeof CacheRow.Type

/** The entry of `key`, marking it used now (restores keep an entry alive). */
export const touchCache = (sql: SqlClient.SqlClient, repoId: string, key: string, now: Date) =>
  sql`
    UPDATE ci_caches SET last_used_at = ${now} WHERE repo_id = ${repoId} AND key = ${key}
    RETURNING repo_id, key, blob_key, size`.pipe(decodeRows(CacheRow), Effect.map((rows) => rows[0]))

export const cacheExists = (sql: SqlClient.SqlClient, repoId: string, key: string) =>
  sql`SELECT 1 FROM ci_caches WHERE repo_id = ${repoId} AND key = ${key}`.pipe(Effect.map((rows) => rows.length > 0))

/** Records a saved archive; false when another run saved the same key first (its blob stays). */
export const insertCache = (sql: SqlClient.SqlClient, row: CacheRow, now: Date) =>
  sql`
    INSERT INTO ci_caches (repo_id, key, blob_key, size, created_at, last_used_at)
    VALUES (${row.repo_id}, ${row.key}, ${row.blob_key}, ${row.size}, ${now}, ${now})
    ON CONFLICT (repo_id, key) DO NOTHING RETURNING 1`.pipe(Effect.map((rows) => rows.length > 0))

/** Entries last used before `before`, oldest first. */
export const unusedSince = (sql: SqlClient.SqlClient, before: Date, limit: number) =>
  sql`
    SELECT repo_id, key, blob_key, size FROM ci_caches WHERE last_used_at < ${before}
    ORDER BY last_used_at LIMIT ${limit}`.pipe(decodeRows(CacheRow))

/** Deletes the entry unless it was used again since `before`; true when it was deleted. */
export const deleteUnused = (sql: SqlClient.SqlClient, row: CacheRow, before: Date) =>
  sql`
    DELETE FROM ci_caches WHERE repo_id = ${row.repo_id} AND key = ${row.key} AND blob_key = ${row.blob_key}
      AND last_used_at < ${before} RETURNING 1`.pipe(Effect.map((rows) => rows.length > 0))
