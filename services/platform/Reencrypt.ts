import { Effect } from "effect"
import { Crypto } from "./Crypto.ts"

/**
 * A secret encrypted under one organization's key, re-encrypted under another's (a
 * repository transfer, GUIDE §16). The purpose (what the secret is and whose) stays the same.
 */
export const reencrypt = (fromOrgId: string, toOrgId: string, purpose: string, ciphertext: string) =>
  Effect.gen(function*() {
    const crypto = yield* Crypto
    const plaintext = yield* crypto.decrypt(fromOrgId, purpose, ciphertext)
    return yield* crypto.encrypt(toOrgId, purpose, plaintext)
  })
