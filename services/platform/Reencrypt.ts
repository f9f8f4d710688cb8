import { Effect } from "effect"
import { Crypto } from "./Crypto.ts"

/**
 * A secret encrypted under one organization's key, re-encrypted under another's (a
 * repository transfer, GUIDE §16). The one place lifecycle code calls `Crypto`, so a change
 * of its signature (a `purpose` argument) touches this file only.
 */
export const reencrypt = (fromOrgId: string, toOrgId: string, ciphertext: string) =>
  Effect.gen(function*() {
    const crypto = yield* Crypto
    const plaintext = yield* crypto.decrypt(fromOrgId, ciphertext)
    return yield* crypto.encrypt(toOrgId, plaintext)
  })
