import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Conflict, NotFound, ValidationError } from "../../schemas/platform/Errors.ts"
import type { CreateGpgKey, GpgKey, GpgKeyList } from "../../schemas/protection/GpgKeys.ts"
import { makeId } from "../platform/Ids.ts"
import { decodeRows, isUniqueViolation } from "../platform/Rows.ts"
import { memberIds } from "../tenancy/Tenancy.ts"
import { parsePublicKey } from "./SignatureCheck.ts"

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

const toKey = (row: KeyRow): GpgKey => ({
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

const invalidKey = (message: string) =>
  new ValidationError({
    message: `Invalid body.armoredPublicKey: ${message}`,
    details: [{ path: "body.armoredPublicKey", message }]
  })

/**
 * GPG public keys registered by users (GUIDE §12 signed commits), at
 * `/api/v1/user/gpg-keys`: a key belongs to the key's user, whatever organization the API
 * key is for; signatures count in every organization the user belongs to.
 */
export class GpgKeys extends Context.Service<GpgKeys, {
  list(userId: string): Effect.Effect<GpgKeyList>
  get(userId: string, id: string): Effect.Effect<GpgKey, NotFound>
  add(userId: string, input: CreateGpgKey): Effect.Effect<GpgKey, ValidationError | Conflict>
  remove(userId: string, id: string): Effect.Effect<void, NotFound>
  /** The armored keys of every member of the organization. */
  organizationKeys(orgId: string): Effect.Effect<ReadonlyArray<string>>
}>()("canopy/protection/GpgKeys") {
  static readonly layer = Layer.effect(
    GpgKeys,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const list = Effect.fn("GpgKeys.list")(function*(userId: string) {
        const rows = yield* sql`
          SELECT * FROM gpg_keys WHERE user_id = ${userId} ORDER BY created_at DESC, id DESC`.pipe(
          decodeRows(KeyRow),
          Effect.orDie
        )
        return { keys: rows.map(toKey), count: rows.length }
      })

      const get = Effect.fn("GpgKeys.get")(function*(userId: string, id: string) {
        const rows = yield* sql`SELECT * FROM gpg_keys WHERE id = ${id} AND user_id = ${userId}`.pipe(
          decodeRows(KeyRow),
          Effect.orDie
        )
        if (rows.length === 0) return yield* new NotFound({ message: `GPG key '${id}' not found` })
        return toKey(rows[0])
      })

      const add = Effect.fn("GpgKeys.add")(function*(userId: string, input: CreateGpgKey) {
        const key = yield* Effect.tryPromise({
          try: () => parsePublicKey(input.armoredPublicKey.trim()),
          catch: (error) =>
            invalidKey(
              `not an armored OpenPGP public key (${
                error instanceof Error ? error.message.slice(0, 200) : "unreadable"
              })`
            )
        })
        const expiration = yield* Effect.promise(() => key.getExpirationTime().catch(() => null))
        const expiresAt = expiration instanceof Date ? expiration : null
        const emails = key.users.map((user) => user.userID?.email ?? "").filter((email) => email !== "")
        const id = makeId("gpg")
        yield* sql`
          INSERT INTO gpg_keys (id, user_id, name, key_id, fingerprint, subkey_ids, emails, armored, expires_at)
          VALUES (${id}, ${userId}, ${input.name ?? null}, ${key.getKeyID().toHex().toUpperCase()},
                  ${key.getFingerprint().toUpperCase()},
                  ${key.getSubkeys().map((sub) => sub.getKeyID().toHex().toUpperCase())}, ${emails},
                  ${input.armoredPublicKey.trim()}, ${expiresAt})`.pipe(
          Effect.catchTag("SqlError", (error) =>
            isUniqueViolation(error)
              ? Effect.fail(new Conflict({ message: "This GPG key is already registered" }))
              : Effect.die(error))
        )
        return yield* Effect.orDie(get(userId, id))
      })

      const remove = Effect.fn("GpgKeys.remove")(function*(userId: string, id: string) {
        yield* get(userId, id)
        yield* sql`DELETE FROM gpg_keys WHERE id = ${id} AND user_id = ${userId}`.pipe(Effect.orDie)
      })

      const organizationKeys = (orgId: string) =>
        sql`
          SELECT k.armored FROM gpg_keys k WHERE k.user_id IN ${memberIds(sql, orgId)}`.pipe(
          decodeRows(ArmoredRow),
          Effect.orDie,
          Effect.map((rows) => rows.map((row) => row.armored))
        )

      return GpgKeys.of({ list, get, add, remove, organizationKeys })
    })
  )
}
