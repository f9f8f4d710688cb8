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
export const hubSignature = (secret: string, body: Buffer | string): string =>
  `sha256=${NodeCrypto.createHmac("sha256", secret).update(body).digest("hex")}`

const standardKey = (secret: string): Buffer =>
  secret.startsWith("whsec_") ? Buffer.from(secret.slice(6), "base64") : Buffer.from(secret, "utf8")

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
