import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { Crypto } from "../platform/Crypto.ts"
import { insertSecretIfAbsent, replaceSecret, secretByName } from "./AppSecretRows.ts"

/**
 * One secret shared by every runner, for what must verify without a stored row: the
 * ALTCHA challenge signatures and the unsubscribe links in every notification. It is
 * generated on first use and kept encrypted (Crypto) in `app_secrets`. It is loaded
 * lazily, so a runner whose master key differs fails only the requests that need it,
 * not its start-up.
 */
const NAME = "subscriptions.signing"
const SYSTEM_ORG = "system"
const PURPOSE = `app-secret:${NAME}`

const mac = (secret: string, payload: string) =>
  createHmac("sha256", secret).update(payload).digest("base64url").slice(0, 32)

export class SigningSecret extends Context.Service<SigningSecret, {
  /** The raw secret (hex), for libraries that take one (altcha-lib). */
  readonly secret: Effect.Effect<string>
  /** `<payload>.<mac>`: a token anyone can hold and only we can make. */
  readonly sign: (payload: string) => Effect.Effect<string>
  /** The payload of a token we signed, or undefined. */
  readonly verify: (token: string) => Effect.Effect<string | undefined>
}>()("canopy/subscriptions/SigningSecret") {
  static readonly layer = Layer.effect(
    SigningSecret,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const crypto = yield* Crypto
      const secret = yield* Effect.cached(
        Effect.gen(function*() {
          const fresh = yield* crypto.encrypt(SYSTEM_ORG, PURPOSE, randomBytes(32).toString("hex"))
          // Two runners at once: the first insert wins and both read it.
          yield* insertSecretIfAbsent(sql, NAME, fresh)
          const [row] = yield* secretByName(sql, NAME)
          const secret = yield* crypto.decrypt(SYSTEM_ORG, PURPOSE, row.ciphertext)
          if (crypto.isLegacy(row.ciphertext)) {
            // Stored before purpose binding: rewrite it bound (compare-and-set, runners may race).
            const upgraded = yield* crypto.encrypt(SYSTEM_ORG, PURPOSE, secret)
            yield* replaceSecret(sql, NAME, row.ciphertext, upgraded)
          }
          return secret
        }).pipe(Effect.orDie)
      )
      return SigningSecret.of({
        secret,
        sign: (payload) => Effect.map(secret, (key) => `${payload}.${mac(key, payload)}`),
        verify: (token) =>
          Effect.map(secret, (key) => {
            const dot = token.lastIndexOf(".")
            if (dot <= 0) return undefined
            const payload = token.slice(0, dot)
            const expected = Buffer.from(mac(key, payload))
            const given = Buffer.from(token.slice(dot + 1))
            return given.length === expected.length && timingSafeEqual(given, expected) ? payload : undefined
          })
      })
    })
  )
}
