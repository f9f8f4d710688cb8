import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"
import type { TrashList } from "../../schemas/git/Lifecycle.ts"
import { type Repository, RepositoryChangedEvent, type UpdateRepository } from "../../schemas/git/Repositories.ts"
import { Conflict, NotFound, type ValidationError } from "../../schemas/platform/Errors.ts"
import { publish } from "../events/Events.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { isUniqueViolation } from "../platform/Rows.ts"
import { PullRequests } from "../pulls/PullRequests.ts"
import { BlobStore } from "../storage/BlobStore.ts"
import { lifecycle } from "../tenancy/Plans.ts"
import { Webhooks } from "../webhooks/Webhooks.ts"
import { RepoCache } from "./RepoCache.ts"
import { Repositories, repositoryView } from "./Repositories.ts"
import {
  deleteTrashedRepository,
  dropRedirect,
  liveRepositoryById,
  lockTrashedRepository,
  restoreRepository,
  setArchived,
  trashedBefore,
  trashedRepository,
  trashOf,
  trashRepository
} from "./RepositoryRows.ts"

const DAY_MS = 24 * 60 * 60 * 1000

/** Who changes a repository's lifecycle (the `pull_request.closed` events' sender). */
export interface LifecycleSender {
  readonly id: string
  readonly name: string
}

/**
 * Archive, trash, restore and purge (GUIDE §16). Archiving and deleting close the open pull
 * requests (a comment and `pull_request.closed` each) in the transaction that changes the
 * repository. A purge removes everything stored under `repos/<repoId>/` in the BlobStore
 * (packs, LFS objects, CI caches) and then the rows; another repository's objects live under
 * another prefix and are never touched.
 */
export class RepositoryLifecycle extends Context.Service<RepositoryLifecycle, {
  /** PATCH: the settings, and `archived` with its effects. */
  update(
    orgId: string,
    slug: string,
    patch: UpdateRepository,
    sender: LifecycleSender
  ): Effect.Effect<Repository, NotFound | ValidationError>
  /** DELETE: to the trash; the name is free, open pull requests close. */
  remove(orgId: string, slug: string, sender: LifecycleSender): Effect.Effect<void, NotFound>
  trash(orgId: string): Effect.Effect<TrashList>
  restore(orgId: string, repoId: string, name: string | undefined): Effect.Effect<Repository, NotFound | Conflict>
  purge(orgId: string, repoId: string): Effect.Effect<void, NotFound>
  /** The cron's sweep: purges repositories trashed more than 30 days before `now`; how many. */
  purgeDue(now: number): Effect.Effect<number>
}>()("canopy/git/RepositoryLifecycle") {
  static readonly layer = Layer.effect(
    RepositoryLifecycle,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      const repos = yield* Repositories
      const pulls = yield* PullRequests
      const webhooks = yield* Webhooks
      const blobs = yield* BlobStore
      const cache = yield* RepoCache
      const withSql = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
        Effect.provideService(effect, SqlClient.SqlClient, sql)
      const changed = (
        repo: { readonly id: string; readonly orgId: string },
        change: "updated" | "deleted" | "created"
      ) => withSql(publish(RepositoryChangedEvent.make(repo.orgId, { repoId: repo.id, change })))
      const trashNotFound = (id: string) => new NotFound({ message: `Repository '${id}' is not in the trash` })

      const update = Effect.fn("RepositoryLifecycle.update")(
        function*(orgId: string, slug: string, patch: UpdateRepository, sender: LifecycleSender) {
          const { archived, ...settings } = patch
          const updated = yield* repos.update(orgId, slug, settings)
          if (archived === undefined || archived === updated.archived) return updated
          const repo = yield* repos.record(orgId, slug)
          yield* sql.withTransaction(Effect.gen(function*() {
            yield* setArchived(sql, repo.id, archived)
            if (archived) {
              yield* withSql(pulls.closeForRepository(
                repo,
                "Closed: the repository was archived and is read-only.",
                sender
              ))
            }
            yield* changed(repo, "updated")
          })).pipe(Effect.orDie)
          return yield* repos.get(orgId, slug)
        }
      )

      const remove = Effect.fn("RepositoryLifecycle.remove")(
        function*(orgId: string, slug: string, sender: LifecycleSender) {
          const repo = yield* repos.record(orgId, slug)
          yield* sql.withTransaction(Effect.gen(function*() {
            yield* trashRepository(sql, repo.id)
            yield* withSql(pulls.closeForRepository(repo, "Closed: the repository was deleted.", sender))
            yield* changed(repo, "deleted")
          })).pipe(Effect.orDie)
        }
      )

      const trashed = (orgId: string, repoId: string) =>
        trashedRepository(sql, orgId, repoId).pipe(
          Effect.orDie,
          Effect.flatMap((rows) => rows.length === 0 ? Effect.fail(trashNotFound(repoId)) : Effect.succeed(rows[0]))
        )

      const trash = Effect.fn("RepositoryLifecycle.trash")(function*(orgId: string) {
        const rows = yield* trashOf(sql, orgId).pipe(
          Effect.orDie
        )
        const repositories = rows.map((row) => {
          const deletedAt = row.deleted_at ?? row.updated_at
          return {
            ...repositoryView(config.baseUrl, row),
            deletedAt: deletedAt.toISOString(),
            purgeAt: new Date(deletedAt.getTime() + lifecycle.trashRetentionDays * DAY_MS).toISOString()
          }
        })
        return { repositories, count: repositories.length }
      })

      const restore = Effect.fn("RepositoryLifecycle.restore")(
        function*(orgId: string, repoId: string, name: string | undefined) {
          const row = yield* trashed(orgId, repoId)
          const newName = name ?? row.name
          yield* sql.withTransaction(Effect.gen(function*() {
            yield* restoreRepository(sql, row.id, newName)
            yield* dropRedirect(sql, row.org_slug, newName)
            yield* changed({ id: row.id, orgId }, "created")
          })).pipe(
            Effect.catchTag("SqlError", (error) =>
              isUniqueViolation(error)
                ? Effect.fail(
                  new Conflict({
                    message: `A repository named '${newName}' exists; restore it under another name`
                  })
                )
                : Effect.die(error))
          )
          const [restored] = yield* liveRepositoryById(sql, row.id).pipe(Effect.orDie)
          return repositoryView(config.baseUrl, restored)
        }
      )

      /** Everything of one trashed repository, under its row lock (a restore waits, then finds nothing). */
      const purgeOne = (repoId: string) =>
        sql.withTransaction(Effect.gen(function*() {
          const locked = yield* lockTrashedRepository(sql, repoId)
          if (locked.length === 0) return false
          // Packs, LFS objects and CI caches all live under the repository's own prefix.
          const stored = yield* blobs.list(`repos/${repoId}/`)
          yield* Effect.forEach(stored, (blob) => blobs.delete(blob.key), { concurrency: 8, discard: true })
          yield* withSql(webhooks.removeForRepository(repoId))
          yield* deleteTrashedRepository(sql, repoId)
          yield* Effect.promise(() => FsP.rm(Path.join(cache.root, repoId), { recursive: true, force: true }))
          return true
        })).pipe(Effect.orDie)

      const purge = Effect.fn("RepositoryLifecycle.purge")(function*(orgId: string, repoId: string) {
        yield* trashed(orgId, repoId)
        yield* purgeOne(repoId)
      })

      const purgeDue = Effect.fn("RepositoryLifecycle.purgeDue")(function*(now: number) {
        const before = new Date(now - lifecycle.trashRetentionDays * DAY_MS)
        let purged = 0
        while (true) {
          const due = yield* trashedBefore(sql, before, 50).pipe(Effect.orDie)
          if (due.length === 0) return purged
          for (const { id } of due) {
            if (yield* purgeOne(id)) purged++
          }
        }
      })

      return RepositoryLifecycle.of({ update, remove, trash, restore, purge, purgeDue })
    })
  )
}
