import * as NodeCrypto from "node:crypto"

/**
 * Webhook signatures (GUIDE §13), computed over the exact bytes sent.
 *
 * - `X-Service-Signature: sha256=<hex>`: HMAC-SHA256 of the body keyed with the secret's
 *   UTF-8 bytes (GitHub's `X-Hub-Signature-256` scheme, same test vector).
 * - `webhook-signature: v1,<base64>` (Standard Webhooks): HMAC-SHA256 of
 *   `<webhook-id>.<webhook-timestamp>.<body>`. The key is the secret's UTF-8 bytes, or, for a
 *   secret of the Standard Webhooks form `whsec_<base64>`, the decoded bytes, so the
 *   standard's own verifier libraries accept it.
 */

/** Keys prepared once per secret: making a key object for every request is a good part of signing's cost. */
const keyCache = new Map<string, NodeCrypto.KeyObject | Buffer>()
const KEY_CACHE_SIZE = 1_000

const cachedKey = (cacheKey: string, bytes: () => Buffer): NodeCrypto.KeyObject | Buffer => {
  let key = keyCache.get(cacheKey)
  if (key === undefined) {
    if (keyCache.size >= KEY_CACHE_SIZE) keyCache.clear()
    const raw = bytes()
    // Key objects cannot be empty; HMAC with an empty key is still defined.
    key = raw.length === 0 ? raw : NodeCrypto.createSecretKey(raw)
    keyCache.set(cacheKey, key)
  }
  return key
}

const hubKey = (secret: string) => cachedKey(`h:${secret}`, () => Buffer.from(secret, "utf8"))

export const hubSignature = (secret: string, body: Buffer | string): string =>
  `sha256=${NodeCrypto.createHmac("sha256", hubKey(secret)).update(body).digest("hex")}`

const standardKey = (secret: string) =>
  cachedKey(
    `s:${secret}`,
    () => secret.startsWith("whsec_") ? Buffer.from(secret.slice(6), "base64") : Buffer.from(secret, "utf8")
  )

export const standardSignature = (
  secret: string,
  id: string,
  timestampSeconds: number,
  body: Buffer | string
): string =>
  `v1,${
    NodeCrypto.createHmac("sha256", standardKey(secret)).update(`${id}.${timestampSeconds}.`).update(body).digest(
      "base64"
    )
  }`

/** Compares a received `sha256=<hex>` header with the expected one in constant time. */
export const verifyHubSignature = (secret: string, body: Buffer | string, header: string): boolean => {
  const expected = Buffer.from(hubSignature(secret, body))
  const received = Buffer.from(header)
  return expected.length === received.length && NodeCrypto.timingSafeEqual(expected, received)
}
