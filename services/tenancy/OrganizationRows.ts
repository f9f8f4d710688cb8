import { Effect, Option, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type * as Statement from "effect/sql/Statement"
import type { CreateOrganization, Organization } from "../../schemas/tenancy/Tenancy.ts"
import { Plan } from "../../schemas/tenancy/Tenancy.ts"
import { makeId } from "../platform/Ids.ts"
import { decodeRows, Int8 } from "../platform/Rows.ts"
import { plans, requestsPerMinute } from "./Plans.ts"

/*
 * The `organizations` table: its rows and every statement on it (tenancy is its one owner).
 * Each takes the caller's `SqlClient`, so it runs in the caller's transaction; other
 * features read organizations through these functions, never with their own SQL.
 */

/** An `organizations` row as selected by `organizationColumns` (`project_id` is a bigint, read as text). */
export const OrganizationRow = Schema.Struct({
  id: Schema.String,
  slug: Schema.String,
  name: Schema.String,
  plan: Plan,
  project_id: Schema.Union([Schema.Number, Schema.String]),
  requests_per_minute: Schema.NullOr(Schema.Number),
  storage_limit_bytes: Schema.NullOr(Int8),
  logo_url: Schema.optional(Schema.NullOr(Schema.String)),
  logo_error: Schema.optional(Schema.NullOr(Schema.String)),
  created_at: Schema.Date
})
export type OrganizationRow = typeof OrganizationRow.Type

const organizationColumns = (sql: SqlClient.SqlClient) =>
  sql.literal(
    "id, slug, name, plan, project_id::text AS project_id, requests_per_minute, storage_limit_bytes, logo_url, logo_error, created_at"
  )

export const toOrganization = (row: OrganizationRow): Organization => ({
  id: row.id,
  slug: row.slug,
  name: row.name,
  plan: row.plan,
  projectId: Number(row.project_id),
  requestsPerMinute: row.requests_per_minute ?? requestsPerMinute[row.plan],
  storageLimitBytes: row.storage_limit_bytes ?? plans[row.plan].storageBytes,
  ...(row.logo_url === undefined ? {} : { logoUrl: row.logo_url, logoError: row.logo_error ?? null }),
  createdAt: row.created_at.toISOString()
})

const first = <A>(rows: ReadonlyArray<A>) => Option.fromUndefinedOr(rows[0])

export const findOrganizationBySlug = (sql: SqlClient.SqlClient, slug: string) =>
  sql`SELECT ${organizationColumns(sql)} FROM organizations WHERE slug = ${slug}`.pipe(
    decodeRows(OrganizationRow),
    Effect.map(first)
  )

/** Every organization, newest first. */
export const allOrganizations = (sql: SqlClient.SqlClient) =>
  sql`SELECT ${organizationColumns(sql)} FROM organizations ORDER BY created_at DESC`.pipe(
    decodeRows(OrganizationRow)
  )

export const insertOrganization = (sql: SqlClient.SqlClient, input: CreateOrganization) =>
  sql`
    INSERT INTO organizations (id, slug, name, plan, requests_per_minute)
    VALUES (${makeId("org")}, ${input.slug}, ${input.name}, ${input.plan ?? "free"},
            ${input.requestsPerMinute ?? null})
    RETURNING ${organizationColumns(sql)}`.pipe(decodeRows(OrganizationRow))

/** Sets name and plan; `requestsPerMinute` undefined keeps the stored value (null clears it). */
export const updateOrganizationRow = (sql: SqlClient.SqlClient, id: string, input: {
  readonly name: string
  readonly plan: Plan
  readonly requestsPerMinute: number | null | undefined
  /** The admin API's storage above the plan; undefined keeps it, null clears it. */
  readonly storageLimitBytes: number | null | undefined
}) =>
  sql`
    UPDATE organizations SET
      name = ${input.name},
      plan = ${input.plan},
      requests_per_minute = ${
    input.requestsPerMinute === undefined ? sql`requests_per_minute` : input.requestsPerMinute
  },
      storage_limit_bytes = ${
    input.storageLimitBytes === undefined ? sql`storage_limit_bytes` : input.storageLimitBytes
  },
      updated_at = now()
    WHERE id = ${id}
    RETURNING ${organizationColumns(sql)}`.pipe(decodeRows(OrganizationRow))

/**
 * What a public page (status page, subscription mail) shows of an organization; by slug
 * also the ETag of its logo's copy (null: no logo to show).
 */
export const OrganizationName = Schema.Struct({
  id: Schema.String,
  slug: Schema.String,
  name: Schema.String,
  logoEtag: Schema.optional(Schema.NullOr(Schema.String))
})
export type OrganizationName = typeof OrganizationName.Type

export const organizationNameBySlug = (sql: SqlClient.SqlClient, slug: string) =>
  sql`SELECT id, slug, name, logo_etag AS "logoEtag" FROM organizations WHERE slug = ${slug}`.pipe(
    decodeRows(OrganizationName),
    Effect.map(first)
  )

export const organizationNameById = (sql: SqlClient.SqlClient, id: string) =>
  sql`SELECT id, slug, name FROM organizations WHERE id = ${id}`.pipe(decodeRows(OrganizationName), Effect.map(first))

const OrganizationSlug = Schema.Struct({ id: Schema.String, slug: Schema.String })

/** The slugs of the organizations among `ids` that exist. */
export const organizationSlugs = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>) =>
  sql`SELECT id, slug FROM organizations WHERE id IN ${sql.in([...ids])}`.pipe(decodeRows(OrganizationSlug))

const PlanRow = Schema.Struct({ plan: Plan })

/** The organization's plan (none: no such organization). */
export const organizationPlan = (sql: SqlClient.SqlClient, id: string) =>
  sql`SELECT plan FROM organizations WHERE id = ${id}`.pipe(
    decodeRows(PlanRow),
    Effect.map((rows) => Option.map(first(rows), (row) => row.plan))
  )

/**
 * The organization's plan as an SQL expression, for a statement that needs it in the same
 * round trip (a push reads its rules and the plan at once): `SELECT …, ${planOf} AS plan`.
 * `id` is the organization's id, or an SQL expression giving it (`sql\`w.org_id\``).
 * NULL when there is no such organization.
 */
/** An organization's storage in bytes: the admin API's override, else null (the plan's applies). */
export const organizationStorageOverrideExpression = (sql: SqlClient.SqlClient, id: string) =>
  sql`(SELECT storage_limit_bytes FROM organizations WHERE id = ${id})`

export const organizationPlanExpression = (sql: SqlClient.SqlClient, id: string | Statement.Fragment) =>
  sql`(SELECT plan FROM organizations WHERE id = ${id})`

/** The stored copy of an organization's logo: where its bytes are in the BlobStore, and their media type. */
export const OrganizationLogoRow = Schema.Struct({
  logo_blob: Schema.NullOr(Schema.String),
  logo_content_type: Schema.NullOr(Schema.String)
})

export const organizationLogo = (sql: SqlClient.SqlClient, id: string) =>
  sql`SELECT logo_blob, logo_content_type FROM organizations WHERE id = ${id}`.pipe(
    decodeRows(OrganizationLogoRow),
    Effect.map(first)
  )

/**
 * Records the logo's URL and the outcome of fetching it: the new copy (`copy`), or an
 * `error` that keeps no copy (the page then shows none). Returns the previous copy's blob
 * key, for the caller to delete once this committed.
 */
export const setOrganizationLogo = (sql: SqlClient.SqlClient, id: string, input: {
  readonly url: string | null
  readonly copy: { readonly blob: string; readonly contentType: string; readonly etag: string } | null
  readonly error: string | null
}) =>
  sql`
    UPDATE organizations o SET
      logo_url = ${input.url},
      logo_blob = ${input.copy?.blob ?? null},
      logo_content_type = ${input.copy?.contentType ?? null},
      logo_etag = ${input.copy?.etag ?? null},
      logo_error = ${input.error},
      updated_at = now()
    FROM (SELECT id AS locked_id, logo_blob AS previous FROM organizations WHERE id = ${id} FOR UPDATE) AS p
    WHERE o.id = p.locked_id
    RETURNING p.previous, ${organizationColumns(sql)}`.pipe(
    decodeRows(Schema.Struct({ ...OrganizationRow.fields, previous: Schema.NullOr(Schema.String) }))
  )

/**
 * The organizations as other features join them (id, slug): `JOIN ${organizationDirectory(sql)} o
 * ON o.id = …`. Postgres pulls the subquery up, so the join plans as one on `organizations`.
 */
export const organizationDirectory = (sql: SqlClient.SqlClient) => sql`(SELECT id, slug FROM organizations)`
