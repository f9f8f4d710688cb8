import { Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type * as Statement from "effect/sql/Statement"
import { decodeRows } from "../platform/Rows.ts"
import { userDirectory } from "../tenancy/Tenancy.ts"

/*
 * The `lfs_locks` table: its rows and every statement on it (`LfsLocks` is its one owner).
 * Each takes the caller's `SqlClient`.
 */

/** A lock with its owner's username (from tenancy's `users`, joined for display). */
export const LockRow = Schema.Struct({
  id: Schema.String,
  path: Schema.String,
  owner_id: Schema.String,
  username: Schema.String,
  created_at: Schema.Date
})
export type LockRow = typeof LockRow.Type

/** A repository's locks by `rest` (`AND …`, `ORDER BY …`), decoded. */
export const findLocks = (sql: SqlClient.SqlClient, repoId: string, rest: Statement.Fragment) =>
  sql`SELECT l.id, l.path, l.owner_id, u.username, l.created_at FROM lfs_locks l JOIN ${
    userDirectory(sql)
  } u ON u.id = l.owner_id
      WHERE l.repo_id = ${repoId} ${rest}`.pipe(decodeRows(LockRow))

/** Locks a path (a unique violation: the path is locked already). */
export const insertLock = (
  sql: SqlClient.SqlClient,
  lock: { readonly id: string; readonly repoId: string; readonly path: string; readonly ownerId: string }
) =>
  sql`INSERT INTO lfs_locks (id, repo_id, path, owner_id) VALUES (${lock.id}, ${lock.repoId}, ${lock.path}, ${lock.ownerId})`

export const deleteLock = (sql: SqlClient.SqlClient, id: string) => sql`DELETE FROM lfs_locks WHERE id = ${id}`

/** The repository's lock of `path` (a list of one, or none). */
export const lockByPath = (sql: SqlClient.SqlClient, repoId: string, path: string) =>
  findLocks(sql, repoId, sql`AND l.path = ${path}`)

export const lockById = (sql: SqlClient.SqlClient, repoId: string, id: string) =>
  findLocks(sql, repoId, sql`AND l.id = ${id}`)

/** A page of the repository's locks, oldest first, optionally of one path or id; one more than `limit` tells a next page. */
export const lockPage = (
  sql: SqlClient.SqlClient,
  repoId: string,
  page: {
    readonly path?: string | undefined
    readonly id?: string | undefined
    readonly limit: number
    readonly offset: number
  }
) => {
  const pathIs = page.path === undefined ? sql`` : sql`AND l.path = ${page.path}`
  const idIs = page.id === undefined ? sql`` : sql`AND l.id = ${page.id}`
  return findLocks(
    sql,
    repoId,
    sql`${pathIs} ${idIs} ORDER BY l.created_at, l.id LIMIT ${page.limit + 1} OFFSET ${page.offset}`
  )
}
