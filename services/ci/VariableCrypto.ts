import type { Effect } from "effect"
import type { Crypto, DecryptError } from "../platform/Crypto.ts"
import { reencrypt } from "../platform/Reencrypt.ts"

/**
 * The one place CI calls `Crypto`: a secret variable's ciphertext is bound to its
 * organization (the key), repository and name (the purpose, authenticated with the
 * ciphertext), so a ciphertext copied to another row does not open.
 */
const purpose = (repoId: string, name: string) => `ci-variable:${repoId}:${name}`

export const sealVariable = (crypto: Crypto["Service"], orgId: string, repoId: string, name: string, value: string) =>
  crypto.encrypt(orgId, purpose(repoId, name), value)

export const openVariable = (
  crypto: Crypto["Service"],
  orgId: string,
  repoId: string,
  name: string,
  ciphertext: string
): Effect.Effect<string, DecryptError> => crypto.decrypt(orgId, purpose(repoId, name), ciphertext)

/** A secret variable's ciphertext under another organization's key (a repository transfer). */
export const moveVariable = (fromOrgId: string, toOrgId: string, repoId: string, name: string, ciphertext: string) =>
  reencrypt(fromOrgId, toOrgId, purpose(repoId, name), ciphertext)
