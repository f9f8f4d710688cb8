import { Effect } from "effect"
import type { Crypto } from "../platform/Crypto.ts"
import { DecryptError } from "../platform/Crypto.ts"

/**
 * The one place the AI provider key meets `Crypto` (GUIDE §15: encrypted with the
 * organization's key, bound to org, repository and purpose). The organization binding is
 * Crypto's key derivation; the repository and purpose are bound by sealing them with the
 * key and checking them on open, so a ciphertext copied to another repository's (or
 * another purpose's) row does not open. When `Crypto` takes a purpose argument, pass
 * `purpose(repoId)` to it here and nowhere else.
 */

const purpose = (repoId: string) => `ai-review:api-key:${repoId}`

export const sealApiKey = (crypto: Crypto["Service"], orgId: string, repoId: string, apiKey: string) =>
  crypto.encrypt(orgId, `${purpose(repoId)}\n${apiKey}`)

export const openApiKey = (crypto: Crypto["Service"], orgId: string, repoId: string, sealed: string) =>
  Effect.flatMap(crypto.decrypt(orgId, sealed), (plain) => {
    const prefix = `${purpose(repoId)}\n`
    return plain.startsWith(prefix)
      ? Effect.succeed(plain.slice(prefix.length))
      : Effect.fail(new DecryptError({ message: "The key belongs to another repository or purpose" }))
  })
