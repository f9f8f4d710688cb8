import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { makeId } from "../platform/Ids.ts"
import { isUniqueViolation } from "../platform/Rows.ts"
import { LfsError } from "./Lfs.ts"
import { deleteLock, insertLock, lockById, lockByPath, lockPage, type LockRow } from "./LfsLockRows.ts"
import type { RepoRecord } from "./Repositories.ts"

/** A lock as the LFS locks API shows it. */
export interface LfsLock {
  readonly id: string
  readonly path: string
  readonly locked_at: string
  readonly owner: { readonly name: string }
}

const toLock = (row: LockRow): LfsLock => ({
  id: row.id,
  path: row.path,
  locked_at: row.created_at.toISOString(),
  owner: { name: row.username }
})

/** A page of locks, oldest first; `next_cursor` is the offset of the next page. */
export interface LockPage {
  readonly locks: ReadonlyArray<LfsLock>
  readonly next_cursor?: string
}

const pageOf = (rows: ReadonlyArray<LockRow>, offset: number, limit: number) => ({
  rows: rows.slice(0, limit),
  next: rows.length > limit ? { next_cursor: String(offset + limit) } : {}
})

/**
 * Git LFS file locks (git-lfs docs/api/locking.md): one lock per path and repository,
 * owned by the key's user. Others may only remove it with `force` (repository writers).
 */
export class LfsLocks extends Context.Service<LfsLocks, {
  create(repo: RepoRecord, userId: string, path: string): Effect.Effect<LfsLock, LfsError | { readonly lock: LfsLock }>
  list(
    repo: RepoRecord,
    filter: {
      readonly path?: string | undefined
      readonly id?: string | undefined
      readonly cursor?: number
      readonly limit?: number
    }
  ): Effect.Effect<LockPage>
  verify(
    repo: RepoRecord,
    userId: string,
    page: { readonly cursor?: number; readonly limit?: number }
  ): Effect.Effect<
    { readonly ours: ReadonlyArray<LfsLock>; readonly theirs: ReadonlyArray<LfsLock>; readonly next_cursor?: string }
  >
  unlock(repo: RepoRecord, userId: string, id: string, force: boolean): Effect.Effect<LfsLock, LfsError>
}>()("canopy/git/LfsLocks") {
  static readonly layer = Layer.effect(
    LfsLocks,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      /** A repository's locks by `rest` (`AND …`, `ORDER BY …`), decoded. */
      const byPath = (repoId: string, path: string) => lockByPath(sql, repoId, path).pipe(Effect.orDie)

      const create = Effect.fn("LfsLocks.create")(function*(repo: RepoRecord, userId: string, path: string) {
        if (path.length === 0 || path.length > 1024) {
          return yield* new LfsError({ status: 422, message: "Invalid path" })
        }
        const id = makeId("lock")
        const inserted = yield* insertLock(sql, { id, repoId: repo.id, path, ownerId: userId }).pipe(
          Effect.as(true),
          Effect.catchTag("SqlError", (error) => isUniqueViolation(error) ? Effect.succeed(false) : Effect.die(error))
        )
        const [row] = yield* byPath(repo.id, path)
        return inserted ? toLock(row) : yield* Effect.fail({ lock: toLock(row) })
      })

      const list = Effect.fn("LfsLocks.list")(function*(
        repo: RepoRecord,
        filter: {
          readonly path?: string | undefined
          readonly id?: string | undefined
          readonly cursor?: number
          readonly limit?: number
        }
      ) {
        const offset = filter.cursor ?? 0
        const limit = Math.min(Math.max(filter.limit ?? 100, 1), 1000)
        const rows = yield* lockPage(sql, repo.id, { path: filter.path, id: filter.id, limit, offset }).pipe(
          Effect.orDie
        )
        const page = pageOf(rows, offset, limit)
        return { locks: page.rows.map(toLock), ...page.next }
      })

      const verify = Effect.fn("LfsLocks.verify")(function*(
        repo: RepoRecord,
        userId: string,
        cursorPage: { readonly cursor?: number; readonly limit?: number }
      ) {
        const offset = cursorPage.cursor ?? 0
        const limit = Math.min(Math.max(cursorPage.limit ?? 100, 1), 1000)
        const rows = yield* lockPage(sql, repo.id, { limit, offset }).pipe(Effect.orDie)
        const page = pageOf(rows, offset, limit)
        return {
          ours: page.rows.filter((row) => row.owner_id === userId).map(toLock),
          theirs: page.rows.filter((row) => row.owner_id !== userId).map(toLock),
          ...page.next
        }
      })

      const unlock = Effect.fn("LfsLocks.unlock")(
        function*(repo: RepoRecord, userId: string, id: string, force: boolean) {
          const [row] = yield* lockById(sql, repo.id, id).pipe(Effect.orDie)
          if (row === undefined) return yield* new LfsError({ status: 404, message: "Lock not found" })
          if (row.owner_id !== userId && !force) {
            return yield* new LfsError({ status: 403, message: `The lock belongs to ${row.username}; use --force` })
          }
          yield* deleteLock(sql, id).pipe(Effect.orDie)
          return toLock(row)
        }
      )

      return LfsLocks.of({ create, list, verify, unlock })
    })
  )
}
