import { Effect } from "effect"
import type { Crypto, DecryptError } from "../platform/Crypto.ts"

/**
 * The one place CI calls `Crypto` (its signature is about to take a `purpose`): a secret
 * variable's ciphertext is bound to its organization (the key), repository and name (sealed
 * with the value and checked on opening), so a ciphertext copied to another row does not open.
 */
const binding = (repoId: string, name: string) => `ci-variable:${repoId}:${name}\n`

export const sealVariable = (crypto: Crypto["Service"], orgId: string, repoId: string, name: string, value: string) =>
  crypto.encrypt(orgId, binding(repoId, name) + value)

export const openVariable = (
  crypto: Crypto["Service"],
  orgId: string,
  repoId: string,
  name: string,
  ciphertext: string
): Effect.Effect<string, DecryptError> =>
  Effect.flatMap(crypto.decrypt(orgId, ciphertext), (text) => {
    const prefix = binding(repoId, name)
    return text.startsWith(prefix)
      ? Effect.succeed(text.slice(prefix.length))
      : Effect.die(new Error(`CI variable ${name}: ciphertext bound to another variable`))
  })
