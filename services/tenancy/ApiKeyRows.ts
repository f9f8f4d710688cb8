import { Effect, Option, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { ApiScope, Plan, Role } from "../../schemas/tenancy/Tenancy.ts"
import { decodeRows, Int8 } from "../platform/Rows.ts"

/*
 * The `api_keys` table: its rows and every statement on it (`ApiKeys` is its one owner;
 * keys are joined with their organization, user and membership, tenancy's own tables).
 * Each takes the caller's `SqlClient`, so it runs in the caller's transaction.
 */

/** A key of the organization's list, as selected below. */
const KeySummaryRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  scopes: Schema.Array(ApiScope),
  username: Schema.String,
  created_at: Schema.Date,
  last_used_at: Schema.NullOr(Schema.Date),
  revoked_at: Schema.NullOr(Schema.Date)
})

/** A live key with its organization, user and role, as selected on authentication. */
const PrincipalRow = Schema.Struct({
  key_id: Schema.String,
  scopes: Schema.Array(ApiScope),
  role: Role,
  id: Schema.String,
  slug: Schema.String,
  org_name: Schema.String,
  plan: Plan,
  project_id: Schema.String,
  requests_per_minute: Schema.NullOr(Schema.Number),
  storage_limit_bytes: Schema.NullOr(Int8),
  org_created_at: Schema.Date,
  user_id: Schema.String,
  username: Schema.String,
  email: Schema.String,
  user_name: Schema.NullOr(Schema.String),
  user_created_at: Schema.Date
})

/** What creating a key reads back. */
const CreatedRow = Schema.Struct({ created_at: Schema.Date })

/** The organization of a key just revoked. */
const RevokedRow = Schema.Struct({ org_id: Schema.String })

export interface NewApiKeyRow {
  readonly id: string
  readonly orgId: string
  readonly userId: string
  readonly name: string
  /** SHA-256 of the secret: the secret itself is never stored. */
  readonly secretHash: string
  readonly scopes: ReadonlyArray<ApiScope>
}

export const insertApiKey = (sql: SqlClient.SqlClient, row: NewApiKeyRow) =>
  sql`
    INSERT INTO api_keys (id, org_id, user_id, name, secret_hash, scopes)
    VALUES (${row.id}, ${row.orgId}, ${row.userId}, ${row.name}, ${row.secretHash}, ${row.scopes as Array<string>})
    RETURNING created_at`.pipe(decodeRows(CreatedRow))

/** The organization's keys with their users, newest first. */
export const keySummaries = (sql: SqlClient.SqlClient, orgId: string) =>
  sql`
    SELECT k.id, k.name, k.scopes, u.username, k.created_at, k.last_used_at, k.revoked_at
    FROM api_keys k JOIN users u ON u.id = k.user_id
    WHERE k.org_id = ${orgId} ORDER BY k.created_at DESC`.pipe(decodeRows(KeySummaryRow))

/** Revokes the key (kept revoked at its first revocation), only one of `orgId`'s when given; its organization. */
export const revokeApiKey = (sql: SqlClient.SqlClient, keyId: string, orgId: string | undefined) =>
  sql`
    UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
    WHERE id = ${keyId} ${orgId === undefined ? sql`` : sql`AND org_id = ${orgId}`}
    RETURNING org_id`.pipe(decodeRows(RevokedRow))

/** The live key whose secret hashes to `hash`, with its organization, user and role. */
export const principalByHash = (sql: SqlClient.SqlClient, hash: string) =>
  sql`
    SELECT k.id AS key_id, k.scopes, m.role,
           o.id, o.slug, o.name AS org_name, o.plan, o.project_id::text AS project_id, o.requests_per_minute,
           o.storage_limit_bytes,
           o.created_at AS org_created_at,
           u.id AS user_id, u.username, u.email, u.name AS user_name, u.created_at AS user_created_at
    FROM api_keys k
    JOIN organizations o ON o.id = k.org_id
    JOIN users u ON u.id = k.user_id
    JOIN memberships m ON m.org_id = k.org_id AND m.user_id = k.user_id
    WHERE k.secret_hash = ${hash} AND k.revoked_at IS NULL`.pipe(
    decodeRows(PrincipalRow),
    Effect.map((rows) => Option.fromUndefinedOr(rows[0]))
  )

/** Sets `last_used_at` of keys `ids` to `times` (ISO strings, same order). */
export const recordLastUsed = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>, times: ReadonlyArray<string>) =>
  sql`
    UPDATE api_keys k SET last_used_at = v.at::timestamptz
    FROM unnest(${ids}::text[], ${times}::text[]) AS v(id, at)
    WHERE k.id = v.id`
