import * as NodeCrypto from "node:crypto"

/**
 * A ciphertext in the legacy `v1` format (additional data `"v1"`, bound to the organization
 * only), as Crypto wrote them before purposes existed: the fixture for upgrade tests.
 */
export const legacyV1Ciphertext = (masterKey: Uint8Array, orgId: string, plaintext: string): string => {
  const key = Buffer.from(NodeCrypto.hkdfSync("sha256", masterKey, Buffer.alloc(0), `canopy:org:${orgId}`, 32))
  const iv = NodeCrypto.randomBytes(12)
  const cipher = NodeCrypto.createCipheriv("aes-256-gcm", key, iv, { authTagLength: 16 })
  cipher.setAAD(Buffer.from("v1"))
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
  return ["v1", iv.toString("base64url"), cipher.getAuthTag().toString("base64url"), body.toString("base64url")]
    .join(".")
}
