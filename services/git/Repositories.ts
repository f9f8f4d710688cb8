import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import {
  type BranchList,
  type CreateRepository,
  type Page,
  type Repository,
  RepositoryChangedEvent,
  type RepositoryList,
  type TagList,
  type UpdateRepository,
  type Visibility
} from "../../schemas/git/Repositories.ts"
import { Conflict, NotFound, ValidationError } from "../../schemas/platform/Errors.ts"
import type { Organization } from "../../schemas/tenancy/Tenancy.ts"
import { publish } from "../events/Events.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { makeId } from "../platform/Ids.ts"
import { isUniqueViolation } from "../platform/Rows.ts"
import { branchRefs, tagRefs } from "./RefRows.ts"

/** Where a branch of a repository points, read in the caller's transaction (pull requests' heads). */
export { branchSha } from "./RefRows.ts"
/** The live repositories' stale settings as a relation to join (pulls' stale sweep). */
export { repositoryStaleSettings } from "./RepositoryRows.ts"
import {
  dropRedirect,
  findRedirect,
  insertRepository,
  liveRepositoriesOf,
  liveRepositoryById,
  liveRepositoryByPath,
  liveRepositoryBySlug,
  type RepositoryRow,
  updateSettings
} from "./RepositoryRows.ts"

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

/** The wire form of a repository row; clone URLs start with `baseUrl`. */
export const repositoryView = (baseUrl: string, row: RepositoryRow): Repository => ({
  id: row.id,
  name: row.name,
  slug: row.slug,
  fullName: `${row.org_slug}/${row.slug}`,
  description: row.description,
  visibility: row.visibility,
  defaultBranch: row.default_branch,
  allowForking: row.allow_forking,
  archived: row.archived,
  cloneUrl: `${baseUrl.replace(/\/$/, "")}/${row.org_slug}/${row.slug}.git`,
  storageBytes: row.pack_bytes + row.lfs_bytes,
  stalePullRequests: {
    enabled: row.stale_enabled,
    warnAfterDays: row.stale_warn_days,
    closeAfterDays: row.stale_close_days
  },
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString()
})

/** Archived repositories are read-only: every write answers 409 naming the archive (GUIDE §16). */
export const refuseArchived = (repo: RepoRecord) =>
  repo.archived
    ? Effect.fail(new Conflict({ message: `Repository '${repo.orgSlug}/${repo.slug}' is archived` }))
    : Effect.void
/** A list's page (GUIDE §4): `limit` (default 100) rows from `offset`. */
const pageOf = <A>(rows: ReadonlyArray<A>, page: Page | undefined) => {
  const offset = page?.offset ?? 0
  return rows.slice(offset, offset + (page?.limit ?? 100))
}

/**
 * Which of a repository's branches some protection rule matches (the branch list's
 * `protected`); branch protection fills it in, the default protects nothing.
 */
export const ProtectedBranches = Context.Reference<
  (repoId: string, branches: ReadonlyArray<string>) => Effect.Effect<ReadonlySet<string>>
>("canopy/git/ProtectedBranches", { defaultValue: () => () => Effect.succeed(new Set<string>()) })

/**
 * Repositories of an organization (spec 001 "Repositories"). Every method is scoped by
 * organization: another organization's repository is a `NotFound`. Archive, trash and
 * transfer are `RepositoryLifecycle`'s and `Transfers`'; a trashed repository answers 404
 * here and frees its name.
 */
export class Repositories extends Context.Service<Repositories, {
  create(org: Organization, input: CreateRepository): Effect.Effect<Repository, Conflict>
  list(orgId: string, page?: Page): Effect.Effect<RepositoryList>
  get(orgId: string, slug: string): Effect.Effect<Repository, NotFound>
  update(orgId: string, slug: string, patch: UpdateRepository): Effect.Effect<Repository, NotFound | ValidationError>
  branches(orgId: string, slug: string, page?: Page): Effect.Effect<BranchList, NotFound>
  tags(orgId: string, slug: string, page?: Page): Effect.Effect<TagList, NotFound>
  /** Internal: a live repository by organization and repository slug, any organization. */
  find(orgSlug: string, repoSlug: string): Effect.Effect<Option.Option<RepoRecord>>
  /** Internal: an organization's live repository, as git access needs it. */
  record(orgId: string, slug: string): Effect.Effect<RepoRecord, NotFound>
  /** Internal: a live repository by id. */
  findById(id: string): Effect.Effect<Option.Option<RepoRecord>>
  /** Internal: where a moved repository's old path leads now (GUIDE §16), if anywhere. */
  redirect(orgSlug: string, repoSlug: string): Effect.Effect<Option.Option<RepoRecord>>
}>()("canopy/git/Repositories") {
  static readonly layer = Layer.effect(
    Repositories,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      const notFound = (slug: string) => new NotFound({ message: `Repository '${slug}' not found` })

      const toRepository = (row: RepositoryRow): Repository => repositoryView(config.baseUrl, row)

      const live = <A>(rows: Effect.Effect<A, SqlError>) => Effect.orDie(rows)

      const findOwned = (orgId: string, slug: string) =>
        live(liveRepositoryBySlug(sql, orgId, slug)).pipe(
          Effect.flatMap((rows) => rows.length === 0 ? Effect.fail(notFound(slug)) : Effect.succeed(rows[0]))
        )

      const changed = (row: { id: string; org_id: string }, change: "created" | "updated" | "deleted") =>
        publish(RepositoryChangedEvent.make(row.org_id, { repoId: row.id, change })).pipe(
          Effect.provideService(SqlClient.SqlClient, sql)
        )

      const create = Effect.fn("Repositories.create")(function*(org: Organization, input: CreateRepository) {
        const id = makeId("repo")
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* insertRepository(sql, {
            id,
            orgId: org.id,
            name: input.name,
            slug: input.name.toLowerCase(),
            description: input.description ?? null,
            visibility: input.visibility ?? "private",
            defaultBranch: input.defaultBranch ?? "main",
            allowForking: input.allowForking ?? false
          })
          // The name is used again: a moved repository's old path stops redirecting here.
          yield* dropRedirect(sql, org.slug, input.name)
          yield* changed({ id, org_id: org.id }, "created")
        })).pipe(
          Effect.catchTag("SqlError", (error) =>
            isUniqueViolation(error)
              ? Effect.fail(new Conflict({ message: `A repository named '${input.name}' already exists` }))
              : Effect.die(error))
        )
        return toRepository(yield* Effect.orDie(findOwned(org.id, input.name)))
      })

      const list = Effect.fn("Repositories.list")(function*(orgId: string, page?: Page) {
        const rows = yield* live(liveRepositoriesOf(sql, orgId))
        return { repositories: pageOf(rows, page).map(toRepository), count: rows.length }
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
          yield* updateSettings(sql, current.id, {
            staleEnabled: stale.enabled,
            staleWarnDays: stale.warn,
            staleCloseDays: stale.close,
            description: patch.description === undefined ? current.description : patch.description,
            visibility: patch.visibility ?? current.visibility,
            defaultBranch: patch.defaultBranch ?? current.default_branch,
            allowForking: patch.allowForking ?? current.allow_forking
          })
          yield* changed(current, "updated")
        })).pipe(Effect.orDie)
        return toRepository(yield* findOwned(orgId, slug))
      })

      const branches = Effect.fn("Repositories.branches")(function*(orgId: string, slug: string, page?: Page) {
        const repo = yield* findOwned(orgId, slug)
        const all = yield* branchRefs(sql, repo.id).pipe(Effect.orDie)
        const rows = pageOf(all, page)
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
        return { branches: list, count: all.length }
      })

      const tags = Effect.fn("Repositories.tags")(function*(orgId: string, slug: string, page?: Page) {
        const repo = yield* findOwned(orgId, slug)
        const rows = yield* tagRefs(sql, repo.id).pipe(Effect.orDie)
        const list = pageOf(rows, page).map((row) => ({
          name: row.name.slice("refs/tags/".length),
          sha: row.sha,
          commitSha: row.peeled ?? row.sha
        }))
        return { tags: list, count: rows.length }
      })

      const find = (orgSlug: string, repoSlug: string) =>
        live(liveRepositoryByPath(sql, orgSlug, repoSlug)).pipe(
          Effect.map((rows) => rows.length === 0 ? Option.none() : Option.some(toRecord(rows[0])))
        )

      const findById = (id: string) =>
        live(liveRepositoryById(sql, id)).pipe(
          Effect.map((rows) => rows.length === 0 ? Option.none() : Option.some(toRecord(rows[0])))
        )

      const record = (orgId: string, slug: string) => Effect.map(findOwned(orgId, slug), toRecord)

      const redirect = (orgSlug: string, repoSlug: string) =>
        Effect.gen(function*() {
          // Only while the old name is free: a repository created under it ends the redirect.
          if (Option.isSome(yield* find(orgSlug, repoSlug))) return Option.none<RepoRecord>()
          const row = yield* findRedirect(sql, orgSlug, repoSlug).pipe(Effect.orDie)
          return Option.map(row, toRecord)
        })

      return Repositories.of({ create, list, get, update, branches, tags, find, record, findById, redirect })
    })
  )
}
