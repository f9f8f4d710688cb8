import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { Conflict, NotFound, ValidationError } from "../../schemas/Errors.ts"
import type {
  BranchList,
  CreateRepository,
  Repository,
  RepositoryList,
  TagList,
  UpdateRepository,
  Visibility
} from "../../schemas/Repositories.ts"
import type { Organization } from "../../schemas/Tenancy.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { publish } from "../platform/Events.ts"
import { makeId } from "../platform/Ids.ts"
import { isUniqueViolation } from "../platform/Tenancy.ts"

interface RepositoryRow {
  readonly id: string
  readonly org_id: string
  readonly org_slug: string
  readonly name: string
  readonly slug: string
  readonly description: string | null
  readonly visibility: Visibility
  readonly default_branch: string
  readonly allow_forking: boolean
  readonly archived: boolean
  readonly pack_bytes: string | number
  readonly lfs_bytes: string | number
  readonly stale_enabled: boolean
  readonly stale_warn_days: number
  readonly stale_close_days: number
  readonly created_at: Date
  readonly updated_at: Date
}

/** What git access and the ref update path need to know about a repository. */
export interface RepoRecord {
  readonly id: string
  readonly orgId: string
  readonly orgSlug: string
  readonly name: string
  readonly slug: string
  readonly visibility: Visibility
  readonly defaultBranch: string
  readonly archived: boolean
}

const toRecord = (row: RepositoryRow): RepoRecord => ({
  id: row.id,
  orgId: row.org_id,
  orgSlug: row.org_slug,
  name: row.name,
  slug: row.slug,
  visibility: row.visibility,
  defaultBranch: row.default_branch,
  archived: row.archived
})

/**
 * Which of a repository's branches some protection rule matches (the branch list's
 * `protected`); branch protection fills it in, the default protects nothing.
 */
export const ProtectedBranches = Context.Reference<
  (repoId: string, branches: ReadonlyArray<string>) => Effect.Effect<ReadonlySet<string>>
>("canopy/git/ProtectedBranches", { defaultValue: () => () => Effect.succeed(new Set<string>()) })

/** Repository change events, published in the transaction of the change. */
export const REPOSITORY_CHANGED = "repository.changed"

/**
 * Repositories of an organization (spec 001 "Repositories"). Every method is scoped by
 * organization: another organization's repository is a `NotFound`. Deleting moves the
 * repository to the trash (`deleted_at`); it then answers 404 and frees its name.
 */
export class Repositories extends Context.Service<Repositories, {
  create(org: Organization, input: CreateRepository): Effect.Effect<Repository, Conflict>
  list(orgId: string): Effect.Effect<RepositoryList>
  get(orgId: string, slug: string): Effect.Effect<Repository, NotFound>
  update(orgId: string, slug: string, patch: UpdateRepository): Effect.Effect<Repository, NotFound | ValidationError>
  remove(orgId: string, slug: string): Effect.Effect<void, NotFound>
  branches(orgId: string, slug: string): Effect.Effect<BranchList, NotFound>
  tags(orgId: string, slug: string): Effect.Effect<TagList, NotFound>
  /** Internal: a live repository by organization and repository slug, any organization. */
  find(orgSlug: string, repoSlug: string): Effect.Effect<Option.Option<RepoRecord>>
  /** Internal: an organization's live repository, as git access needs it. */
  record(orgId: string, slug: string): Effect.Effect<RepoRecord, NotFound>
  /** Internal: a live repository by id. */
  findById(id: string): Effect.Effect<Option.Option<RepoRecord>>
}>()("canopy/git/Repositories") {
  static readonly layer = Layer.effect(
    Repositories,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      const notFound = (slug: string) => new NotFound({ message: `Repository '${slug}' not found` })

      const toRepository = (row: RepositoryRow): Repository => ({
        id: row.id,
        name: row.name,
        slug: row.slug,
        fullName: `${row.org_slug}/${row.slug}`,
        description: row.description,
        visibility: row.visibility,
        defaultBranch: row.default_branch,
        allowForking: row.allow_forking,
        archived: row.archived,
        cloneUrl: `${config.baseUrl.replace(/\/$/, "")}/${row.org_slug}/${row.slug}.git`,
        storageBytes: Number(row.pack_bytes) + Number(row.lfs_bytes),
        stalePullRequests: {
          enabled: row.stale_enabled,
          warnAfterDays: row.stale_warn_days,
          closeAfterDays: row.stale_close_days
        },
        createdAt: row.created_at.toISOString(),
        updatedAt: row.updated_at.toISOString()
      })

      const selectLive = sql`
        SELECT r.*, o.slug AS org_slug FROM repositories r JOIN organizations o ON o.id = r.org_id
        WHERE r.deleted_at IS NULL`

      const findOwned = (orgId: string, slug: string) =>
        sql<RepositoryRow>`${selectLive} AND r.org_id = ${orgId} AND r.slug = ${slug.toLowerCase()}`.pipe(
          Effect.orDie,
          Effect.flatMap((rows) => rows.length === 0 ? Effect.fail(notFound(slug)) : Effect.succeed(rows[0]))
        )

      const changed = (row: { id: string; org_id: string }, change: string) =>
        publish({ type: REPOSITORY_CHANGED, orgId: row.org_id, data: { repoId: row.id, change } }).pipe(
          Effect.provideService(SqlClient.SqlClient, sql)
        )

      const create = Effect.fn("Repositories.create")(function*(org: Organization, input: CreateRepository) {
        const id = makeId("repo")
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`
            INSERT INTO repositories (id, org_id, name, slug, description, visibility, default_branch, allow_forking)
            VALUES (${id}, ${org.id}, ${input.name}, ${input.name.toLowerCase()}, ${input.description ?? null},
                    ${input.visibility ?? "private"}, ${input.defaultBranch ?? "main"}, ${input.allowForking ?? false})`
          yield* changed({ id, org_id: org.id }, "created")
        })).pipe(
          Effect.catchTag("SqlError", (error) =>
            isUniqueViolation(error)
              ? Effect.fail(new Conflict({ message: `A repository named '${input.name}' already exists` }))
              : Effect.die(error))
        )
        return toRepository(yield* Effect.orDie(findOwned(org.id, input.name)))
      })

      const list = Effect.fn("Repositories.list")(function*(orgId: string) {
        const rows = yield* sql<
          RepositoryRow
        >`${selectLive} AND r.org_id = ${orgId} ORDER BY r.created_at DESC, r.id DESC`
          .pipe(Effect.orDie)
        return { repositories: rows.map(toRepository), count: rows.length }
      })

      const get = Effect.fn("Repositories.get")(function*(orgId: string, slug: string) {
        return toRepository(yield* findOwned(orgId, slug))
      })

      const update = Effect.fn("Repositories.update")(function*(orgId: string, slug: string, patch: UpdateRepository) {
        const current = yield* findOwned(orgId, slug)
        const stale = {
          enabled: patch.stalePullRequests?.enabled ?? current.stale_enabled,
          warn: patch.stalePullRequests?.warnAfterDays ?? current.stale_warn_days,
          close: patch.stalePullRequests?.closeAfterDays ?? current.stale_close_days
        }
        if (stale.close <= stale.warn) {
          return yield* new ValidationError({
            message: "stalePullRequests.closeAfterDays must be greater than warnAfterDays",
            details: [{ path: "body.stalePullRequests.closeAfterDays", message: "must be greater than warnAfterDays" }]
          })
        }
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`
            UPDATE repositories SET
              stale_enabled = ${stale.enabled}, stale_warn_days = ${stale.warn}, stale_close_days = ${stale.close},
              description = ${patch.description === undefined ? current.description : patch.description},
              visibility = ${patch.visibility ?? current.visibility},
              default_branch = ${patch.defaultBranch ?? current.default_branch},
              allow_forking = ${patch.allowForking ?? current.allow_forking},
              updated_at = now()
            WHERE id = ${current.id}`
          yield* changed(current, "updated")
        })).pipe(Effect.orDie)
        return toRepository(yield* findOwned(orgId, slug))
      })

      const remove = Effect.fn("Repositories.remove")(function*(orgId: string, slug: string) {
        const current = yield* findOwned(orgId, slug)
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`UPDATE repositories SET deleted_at = now(), updated_at = now() WHERE id = ${current.id}`
          yield* changed(current, "deleted")
        })).pipe(Effect.orDie)
      })

      const branches = Effect.fn("Repositories.branches")(function*(orgId: string, slug: string) {
        const repo = yield* findOwned(orgId, slug)
        const rows = yield* sql<{ name: string; sha: string }>`
          SELECT name, sha FROM repo_refs WHERE repo_id = ${repo.id} AND name LIKE 'refs/heads/%' ORDER BY name`
          .pipe(Effect.orDie)
        const names = rows.map((row) => row.name.slice("refs/heads/".length))
        const protectedNames = yield* (yield* ProtectedBranches)(repo.id, names)
        const list = rows.map((row, index) => {
          const name = names[index]
          return {
            name,
            commitSha: row.sha,
            isDefault: name === repo.default_branch,
            protected: protectedNames.has(name)
          }
        })
        return { branches: list, count: list.length }
      })

      const tags = Effect.fn("Repositories.tags")(function*(orgId: string, slug: string) {
        const repo = yield* findOwned(orgId, slug)
        const rows = yield* sql<{ name: string; sha: string; peeled: string | null }>`
          SELECT name, sha, peeled FROM repo_refs WHERE repo_id = ${repo.id} AND name LIKE 'refs/tags/%' ORDER BY name`
          .pipe(Effect.orDie)
        const list = rows.map((row) => ({
          name: row.name.slice("refs/tags/".length),
          sha: row.sha,
          commitSha: row.peeled ?? row.sha
        }))
        return { tags: list, count: list.length }
      })

      const find = (orgSlug: string, repoSlug: string) =>
        sql<RepositoryRow>`${selectLive} AND o.slug = ${orgSlug} AND r.slug = ${repoSlug.toLowerCase()}`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.length === 0 ? Option.none() : Option.some(toRecord(rows[0])))
        )

      const findById = (id: string) =>
        sql<RepositoryRow>`${selectLive} AND r.id = ${id}`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.length === 0 ? Option.none() : Option.some(toRecord(rows[0])))
        )

      const record = (orgId: string, slug: string) => Effect.map(findOwned(orgId, slug), toRecord)

      return Repositories.of({ create, list, get, update, remove, branches, tags, find, record, findById })
    })
  )
}
