import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Conflict, NotFound, ValidationError } from "../../schemas/platform/Errors.ts"
import type { CreateGpgKey, GpgKey, GpgKeyList } from "../../schemas/protection/GpgKeys.ts"
import { makeId } from "../platform/Ids.ts"
import { isUniqueViolation } from "../platform/Rows.ts"
import { deleteGpgKey, gpgKeyById, gpgKeysOf, insertGpgKey, organizationArmoredKeys, toKey } from "./GpgKeyRows.ts"
import { parsePublicKey } from "./SignatureCheck.ts"

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
        const rows = yield* gpgKeysOf(sql, userId).pipe(Effect.orDie)
        return { keys: rows.map(toKey), count: rows.length }
      })

      const get = Effect.fn("GpgKeys.get")(function*(userId: string, id: string) {
        const rows = yield* gpgKeyById(sql, userId, id).pipe(Effect.orDie)
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
        yield* insertGpgKey(sql, {
          id,
          userId,
          name: input.name ?? null,
          keyId: key.getKeyID().toHex().toUpperCase(),
          fingerprint: key.getFingerprint().toUpperCase(),
          subkeyIds: key.getSubkeys().map((sub) => sub.getKeyID().toHex().toUpperCase()),
          emails,
          armored: input.armoredPublicKey.trim(),
          expiresAt
        }).pipe(
          Effect.catchTag("SqlError", (error) =>
            isUniqueViolation(error)
              ? Effect.fail(new Conflict({ message: "This GPG key is already registered" }))
              : Effect.die(error))
        )
        return yield* Effect.orDie(get(userId, id))
      })

      const remove = Effect.fn("GpgKeys.remove")(function*(userId: string, id: string) {
        yield* get(userId, id)
        yield* deleteGpgKey(sql, userId, id).pipe(Effect.orDie)
      })

      const organizationKeys = (orgId: string) => organizationArmoredKeys(sql, orgId).pipe(Effect.orDie)

      return GpgKeys.of({ list, get, add, remove, organizationKeys })
    })
  )
}
