import type { Crypto } from "../platform/Crypto.ts"
import { reencrypt } from "../platform/Reencrypt.ts"

/**
 * The one place the AI provider key meets `Crypto` (GUIDE §15: encrypted with the
 * organization's key, bound to org, repository and purpose): the purpose names the
 * repository, so a ciphertext copied to another repository's (or another purpose's) row
 * does not open.
 */
const purpose = (repoId: string) => `ai-review:api-key:${repoId}`

export const sealApiKey = (crypto: Crypto["Service"], orgId: string, repoId: string, apiKey: string) =>
  crypto.encrypt(orgId, purpose(repoId), apiKey)

export const openApiKey = (crypto: Crypto["Service"], orgId: string, repoId: string, sealed: string) =>
  crypto.decrypt(orgId, purpose(repoId), sealed)

/** The key under another organization's key (a repository transfer). */
export const moveApiKey = (fromOrgId: string, toOrgId: string, repoId: string, sealed: string) =>
  reencrypt(fromOrgId, toOrgId, purpose(repoId), sealed)
