import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { GpgKey } from "../../schemas/protection/GpgKeys.ts"
import { decodeRows } from "../platform/Rows.ts"
import { memberIds } from "../tenancy/Tenancy.ts"

/*
 * The `gpg_keys` table: its row, how the API presents it, and every statement on it.
 */

/** A stored key. */
const KeyRow = Schema.Struct({
  id: Schema.String,
  user_id: Schema.String,
  name: Schema.NullOr(Schema.String),
  key_id: Schema.String,
  fingerprint: Schema.String,
  subkey_ids: Schema.Array(Schema.String),
  emails: Schema.Array(Schema.String),
  armored: Schema.String,
  expires_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date
})
type KeyRow = typeof KeyRow.Type

const ArmoredRow = Schema.Struct({ armored: Schema.String })

export const toKey = (row: KeyRow): GpgKey => ({
  id: row.id,
  name: row.name,
  keyId: row.key_id,
  fingerprint: row.fingerprint,
  subkeyIds: row.subkey_ids,
  emails: row.emails,
  armoredPublicKey: row.armored,
  expiresAt: row.expires_at?.toISOString() ?? null,
  createdAt: row.created_at.toISOString()
})

export interface NewGpgKey {
  readonly id: string
  readonly userId: string
  readonly name: string | null
  readonly keyId: string
  readonly fingerprint: string
  readonly subkeyIds: ReadonlyArray<string>
  readonly emails: ReadonlyArray<string>
  readonly armored: string
  readonly expiresAt: Date | null
}

/** A user's keys, newest first. */
export const gpgKeysOf = (sql: SqlClient.SqlClient, userId: string) =>
  sql`SELECT * FROM gpg_keys WHERE user_id = ${userId} ORDER BY created_at DESC, id DESC`.pipe(decodeRows(KeyRow))

export const gpgKeyById = (sql: SqlClient.SqlClient, userId: string, id: string) =>
  sql`SELECT * FROM gpg_keys WHERE id = ${id} AND user_id = ${userId}`.pipe(decodeRows(KeyRow))

/** Fails with the unique violation where the key is already registered. */
export const insertGpgKey = (sql: SqlClient.SqlClient, key: NewGpgKey) =>
  sql`
    INSERT INTO gpg_keys (id, user_id, name, key_id, fingerprint, subkey_ids, emails, armored, expires_at)
    VALUES (${key.id}, ${key.userId}, ${key.name}, ${key.keyId}, ${key.fingerprint}, ${key.subkeyIds},
            ${key.emails}, ${key.armored}, ${key.expiresAt})`

export const deleteGpgKey = (sql: SqlClient.SqlClient, userId: string, id: string) =>
  sql`DELETE FROM gpg_keys WHERE id = ${id} AND user_id = ${userId}`

/** The armored keys of every member of the organization. */
export const organizationArmoredKeys = (sql: SqlClient.SqlClient, orgId: string) =>
  sql`SELECT k.armored FROM gpg_keys k WHERE k.user_id IN ${memberIds(sql, orgId)}`.pipe(
    decodeRows(ArmoredRow),
    Effect.map((rows) => rows.map((row) => row.armored))
  )
