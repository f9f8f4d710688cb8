import { Effect, Option, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type * as Statement from "effect/sql/Statement"
import { Visibility } from "../../schemas/git/Repositories.ts"
import { Plan } from "../../schemas/tenancy/Tenancy.ts"
import { decodeRows, Int8 } from "../platform/Rows.ts"
import {
  organizationDirectory,
  organizationPlanExpression,
  organizationStorageOverrideExpression
} from "../tenancy/Tenancy.ts"

/*
 * The `repositories` table: its row and every statement that writes it (the table's one
 * owner). Each takes the caller's `SqlClient`, so it runs in the caller's transaction; the
 * byte counters are fragments the pack and LFS writers end their own statements with.
 */

/** A repository row with its organization's slug joined; rows are decoded with it. */
export const RepositoryRow = Schema.Struct({
  id: Schema.String,
  org_id: Schema.String,
  org_slug: Schema.String,
  name: Schema.String,
  slug: Schema.String,
  description: Schema.NullOr(Schema.String),
  visibility: Visibility,
  default_branch: Schema.String,
  allow_forking: Schema.Boolean,
  archived: Schema.Boolean,
  pack_bytes: Int8,
  lfs_bytes: Int8,
  stale_enabled: Schema.Boolean,
  stale_warn_days: Schema.Int,
  stale_close_days: Schema.Int,
  deleted_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type RepositoryRow = typeof RepositoryRow.Type

/** Live repositories (not in the trash) by `rest` (`AND …`, `ORDER BY …`), decoded. */
export const findLiveRepositories = (sql: SqlClient.SqlClient, rest: Statement.Fragment) =>
  sql`
    SELECT r.*, o.slug AS org_slug FROM repositories r JOIN ${organizationDirectory(sql)} o ON o.id = r.org_id
    WHERE r.deleted_at IS NULL ${rest}`.pipe(decodeRows(RepositoryRow))

/** Repositories in the trash by `rest` (`AND …`, `ORDER BY …`), decoded. */
export const findTrashedRepositories = (sql: SqlClient.SqlClient, rest: Statement.Fragment) =>
  sql`
    SELECT r.*, o.slug AS org_slug FROM repositories r JOIN ${organizationDirectory(sql)} o ON o.id = r.org_id
    WHERE r.deleted_at IS NOT NULL ${rest}`.pipe(decodeRows(RepositoryRow))

export interface NewRepositoryRow {
  readonly id: string
  readonly orgId: string
  readonly name: string
  readonly slug: string
  readonly description: string | null
  readonly visibility: Visibility
  readonly defaultBranch: string
  readonly allowForking: boolean
}

export const insertRepository = (sql: SqlClient.SqlClient, row: NewRepositoryRow) =>
  sql`
    INSERT INTO repositories (id, org_id, name, slug, description, visibility, default_branch, allow_forking)
    VALUES (${row.id}, ${row.orgId}, ${row.name}, ${row.slug}, ${row.description},
            ${row.visibility}, ${row.defaultBranch}, ${row.allowForking})`

/** The settings a PATCH sets (all of them, the unchanged ones as stored). */
export interface RepositorySettings {
  readonly staleEnabled: boolean
  readonly staleWarnDays: number
  readonly staleCloseDays: number
  readonly description: string | null
  readonly visibility: Visibility
  readonly defaultBranch: string
  readonly allowForking: boolean
}

export const updateSettings = (sql: SqlClient.SqlClient, id: string, settings: RepositorySettings) =>
  sql`
    UPDATE repositories SET
      stale_enabled = ${settings.staleEnabled}, stale_warn_days = ${settings.staleWarnDays},
      stale_close_days = ${settings.staleCloseDays},
      description = ${settings.description},
      visibility = ${settings.visibility},
      default_branch = ${settings.defaultBranch},
      allow_forking = ${settings.allowForking},
      updated_at = now()
    WHERE id = ${id}`

/** Moves a repository to the trash: it answers 404 from now on and frees its name. */
export const trashRepository = (sql: SqlClient.SqlClient, id: string) =>
  sql`UPDATE repositories SET deleted_at = now(), updated_at = now() WHERE id = ${id}`

/** Archives or unarchives a repository (the ref update path reads the flag under the row lock). */
export const setArchived = (sql: SqlClient.SqlClient, id: string, archived: boolean) =>
  sql`UPDATE repositories SET archived = ${archived}, updated_at = now() WHERE id = ${id}`

/** Brings a trashed repository back under `name` (fails on the live-name unique index when taken). */
export const restoreRepository = (sql: SqlClient.SqlClient, id: string, name: string) =>
  sql`
    UPDATE repositories SET deleted_at = NULL, name = ${name}, slug = ${name.toLowerCase()}, updated_at = now()
    WHERE id = ${id} AND deleted_at IS NOT NULL`

/** Deletes a trashed repository's row; its refs, packs, LFS, pull requests, issues and rules cascade. */
export const deleteTrashedRepository = (sql: SqlClient.SqlClient, id: string) =>
  sql`DELETE FROM repositories WHERE id = ${id} AND deleted_at IS NOT NULL`

const IdRow = Schema.Struct({ id: Schema.String })

/** Trashed repositories deleted before `before` (due for purging), oldest first. */
export const trashedBefore = (sql: SqlClient.SqlClient, before: Date, limit: number) =>
  sql`
    SELECT id FROM repositories WHERE deleted_at IS NOT NULL AND deleted_at < ${before}
    ORDER BY deleted_at LIMIT ${limit}`.pipe(decodeRows(IdRow))

/** Moves a repository to another organization (a transfer; the caller's transaction). */
export const moveRepositoryRow = (sql: SqlClient.SqlClient, id: string, toOrgId: string) =>
  sql`UPDATE repositories SET org_id = ${toOrgId}, updated_at = now() WHERE id = ${id}`

/** The old path of a moved repository, answered with a 301 until the name is reused. */
export const insertRedirect = (sql: SqlClient.SqlClient, orgSlug: string, repoSlug: string, repoId: string) =>
  sql`
    INSERT INTO repo_redirects (org_slug, repo_slug, repo_id) VALUES (${orgSlug}, ${repoSlug}, ${repoId})
    ON CONFLICT (org_slug, repo_slug) DO UPDATE SET repo_id = excluded.repo_id, created_at = now()`

/** The name is used again: its redirect ends. */
export const dropRedirect = (sql: SqlClient.SqlClient, orgSlug: string, repoSlug: string) =>
  sql`DELETE FROM repo_redirects WHERE org_slug = ${orgSlug} AND repo_slug = ${repoSlug.toLowerCase()}`

/** Where an old path leads: the live repository it names now, if any. */
export const findRedirect = (sql: SqlClient.SqlClient, orgSlug: string, repoSlug: string) =>
  sql`
    SELECT r.*, o.slug AS org_slug FROM repo_redirects d
    JOIN repositories r ON r.id = d.repo_id AND r.deleted_at IS NULL
    JOIN ${organizationDirectory(sql)} o ON o.id = r.org_id
    WHERE d.org_slug = ${orgSlug} AND d.repo_slug = ${repoSlug.toLowerCase()}`.pipe(
    decodeRows(RepositoryRow),
    Effect.map((rows) => Option.fromNullishOr(rows[0]))
  )

const NumberRow = Schema.Struct({ last_number: Schema.Int })

/** Takes the next number of the repository's sequence (locking its row); none if there is no such repository. */
export const takeNumber = (sql: SqlClient.SqlClient, repoId: string) =>
  sql`UPDATE repositories SET last_number = last_number + 1 WHERE id = ${repoId} RETURNING last_number`.pipe(
    decodeRows(NumberRow),
    Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), (row) => row.last_number))
  )

const RefUpdateState = Schema.Struct({ archived: Schema.Boolean, deleted: Schema.Boolean })

/** Locks the repository row for a ref update; whether it is archived or trashed (none: no such row). */
export const lockForRefUpdate = (sql: SqlClient.SqlClient, repoId: string) =>
  sql`SELECT archived, deleted_at IS NOT NULL AS deleted FROM repositories WHERE id = ${repoId} FOR UPDATE`.pipe(
    decodeRows(RefUpdateState),
    Effect.map((rows) => Option.fromNullishOr(rows[0]))
  )

/** Refs moved: the repository was updated, and its default branch may be a newly pushed one. */
export const recordRefUpdate = (sql: SqlClient.SqlClient, repoId: string, defaultBranch: string) =>
  sql`UPDATE repositories SET updated_at = now(), default_branch = ${defaultBranch} WHERE id = ${repoId}`

/** Adds `added` (an SQL expression, e.g. over the caller's CTE) to the pack bytes; the tail of the caller's statement. */
export const addPackBytes = (sql: SqlClient.SqlClient, repoId: string, added: Statement.Fragment) =>
  sql`UPDATE repositories SET pack_bytes = pack_bytes + ${added} WHERE id = ${repoId}`

export const freePackBytes = (sql: SqlClient.SqlClient, repoId: string, freed: number) =>
  sql`UPDATE repositories SET pack_bytes = pack_bytes - ${freed} WHERE id = ${repoId}`

/** Adds `added` (an SQL expression, e.g. over the caller's CTE) to the LFS bytes; the tail of the caller's statement. */
export const addLfsBytes = (sql: SqlClient.SqlClient, repoId: string, added: Statement.Fragment) =>
  sql`UPDATE repositories SET lfs_bytes = lfs_bytes + ${added} WHERE id = ${repoId}`

/** Bytes of packs and of LFS objects: the counters, or (`numeric`) their sums. */
const StorageBytes = Schema.Struct({ pack_bytes: Int8, lfs_bytes: Int8 })
const StorageSums = Schema.Struct({ pack_bytes: Schema.NumberFromString, lfs_bytes: Schema.NumberFromString })

/** Recomputes the byte counters from the pack and LFS rows; the new values, none if there is no such repository. */
export const recountStorage = (sql: SqlClient.SqlClient, repoId: string) =>
  sql`
    UPDATE repositories SET
      pack_bytes = (SELECT coalesce(sum(pack_bytes + idx_bytes), 0) FROM repo_packs WHERE repo_id = ${repoId}),
      lfs_bytes = (SELECT coalesce(sum(size), 0) FROM lfs_objects WHERE repo_id = ${repoId})
    WHERE id = ${repoId}
    RETURNING pack_bytes, lfs_bytes`.pipe(
    decodeRows(StorageBytes),
    Effect.map((rows) => Option.fromNullishOr(rows[0]))
  )

/** Bytes of an organization's live repositories, summed. */
export const organizationStorage = (sql: SqlClient.SqlClient, orgId: string) =>
  sql`
    SELECT coalesce(sum(pack_bytes), 0) AS pack_bytes, coalesce(sum(lfs_bytes), 0) AS lfs_bytes
    FROM repositories WHERE org_id = ${orgId} AND deleted_at IS NULL`.pipe(
    decodeRows(StorageSums),
    Effect.map((rows) => rows[0])
  )

/**
 * The live repositories' stale pull request settings, as pulls joins them:
 * `JOIN ${repositoryStaleSettings(sql)} r ON r.id = …` (pulled up by Postgres: one query).
 */
export const repositoryStaleSettings = (sql: SqlClient.SqlClient) =>
  sql`(SELECT id, stale_enabled, stale_warn_days, stale_close_days FROM repositories WHERE deleted_at IS NULL)`

/** The organization's live repository named `slug` (case-insensitive). */
export const liveRepositoryBySlug = (sql: SqlClient.SqlClient, orgId: string, slug: string) =>
  findLiveRepositories(sql, sql`AND r.org_id = ${orgId} AND r.slug = ${slug.toLowerCase()}`)

/** The organization's live repositories, newest first. */
export const liveRepositoriesOf = (sql: SqlClient.SqlClient, orgId: string) =>
  findLiveRepositories(sql, sql`AND r.org_id = ${orgId} ORDER BY r.created_at DESC, r.id DESC`)

/** The live repository at `orgSlug/repoSlug` (the repository slug case-insensitive). */
export const liveRepositoryByPath = (sql: SqlClient.SqlClient, orgSlug: string, repoSlug: string) =>
  findLiveRepositories(sql, sql`AND o.slug = ${orgSlug} AND r.slug = ${repoSlug.toLowerCase()}`)

export const liveRepositoryById = (sql: SqlClient.SqlClient, id: string) =>
  findLiveRepositories(sql, sql`AND r.id = ${id}`)

/** The organization's trashed repository `repoId`. */
export const trashedRepository = (sql: SqlClient.SqlClient, orgId: string, repoId: string) =>
  findTrashedRepositories(sql, sql`AND r.org_id = ${orgId} AND r.id = ${repoId}`)

/** The organization's trash, most recently deleted first. */
export const trashOf = (sql: SqlClient.SqlClient, orgId: string) =>
  findTrashedRepositories(sql, sql`AND r.org_id = ${orgId} ORDER BY r.deleted_at DESC`)

/** Locks a trashed repository's row for the transaction (none: restored or purged meanwhile). */
export const lockTrashedRepository = (sql: SqlClient.SqlClient, repoId: string) =>
  sql`SELECT id FROM repositories WHERE id = ${repoId} AND deleted_at IS NOT NULL FOR UPDATE`

/**
 * An organization's plan, its storage override (the admin API's "100 GB+") and the bytes of
 * its live repositories (`sum(bigint)` is a `numeric`: a string). Trashed repositories stop
 * counting at their deletion.
 */
const UsageRow = Schema.Struct({
  plan: Schema.NullOr(Plan),
  storage_limit_bytes: Schema.NullOr(Int8),
  used: Schema.NumberFromString
})

export const organizationStorageUsage = (sql: SqlClient.SqlClient, orgId: string) =>
  sql`
    SELECT ${organizationPlanExpression(sql, orgId)} AS plan,
      ${organizationStorageOverrideExpression(sql, orgId)} AS storage_limit_bytes,
      coalesce(sum(r.pack_bytes + r.lfs_bytes), 0) AS used
    FROM repositories r WHERE r.org_id = ${orgId} AND r.deleted_at IS NULL`.pipe(decodeRows(UsageRow))

const RepoBytes = Schema.Struct({ name: Schema.String, bytes: Int8 })

/** Each live repository of the organization with its bytes (packs + LFS), largest first. */
export const repositoryBytesOf = (sql: SqlClient.SqlClient, orgId: string) =>
  sql`
    SELECT name, pack_bytes + lfs_bytes AS bytes FROM repositories
    WHERE org_id = ${orgId} AND deleted_at IS NULL ORDER BY bytes DESC, name`.pipe(decodeRows(RepoBytes))
