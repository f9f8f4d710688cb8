import { Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { decodeRows, Int8 } from "../platform/Rows.ts"
import { addLfsBytes } from "./RepositoryRows.ts"

/*
 * The `lfs_objects` table: its rows and every statement on it (`Lfs` is its one owner).
 * Each takes the caller's `SqlClient`.
 */

/** An LFS object the repository has, with its size. */
const StoredObject = Schema.Struct({ oid: Schema.String, size: Int8 })

/** Which of `oids` (not empty) the repository has, with their sizes. */
export const storedObjects = (sql: SqlClient.SqlClient, repoId: string, oids: ReadonlyArray<string>) =>
  sql`SELECT oid, size FROM lfs_objects WHERE repo_id = ${repoId} AND oid IN ${sql.in([...oids])}`.pipe(
    decodeRows(StoredObject)
  )

/** Records an uploaded object (once) and adds its size to the repository's LFS bytes, in one statement. */
export const recordObject = (sql: SqlClient.SqlClient, repoId: string, oid: string, size: number) =>
  sql`
    WITH inserted AS (
      INSERT INTO lfs_objects (repo_id, oid, size) VALUES (${repoId}, ${oid}, ${size})
      ON CONFLICT DO NOTHING RETURNING size
    )
    ${addLfsBytes(sql, repoId, sql`coalesce((SELECT size FROM inserted), 0)`)}`
