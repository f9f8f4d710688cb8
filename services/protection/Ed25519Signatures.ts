/**
 * Ed25519 signature checks through Node's crypto, for the plain case that gpg and git make
 * (`gpg --quick-gen-key … ed25519`: a v4 signature, SHA-2, no expiry, notations or unknown
 * subpackets). openpgp's own `SignaturePacket.verify` imports the key into WebCrypto and
 * verifies on the thread pool for every call, which costs about twice Node's synchronous
 * `crypto.verify` with a cached `KeyObject` (a 100-commit push verifies 100 signatures on its
 * critical path). Like `SignatureCheck.ts` it imports only node built-ins and `openpgp`
 * (the verification workers load it without the app).
 *
 * This path can only accept: anything it does not handle, and any signature that fails
 * here, is left to openpgp's full verification (`verifiedOpenPgp` in `SignatureCheck.ts`).
 */
import { createHash, createPublicKey, type KeyObject, verify } from "node:crypto"
import * as openpgp from "openpgp"

const EDDSA_LEGACY = 22
const ED25519 = 27
/** RFC 9580 §5.2.3.3–4: EdDSA signatures need a digest of at least 256 bits; these are the ones we take. */
const DIGESTS = new Map<number, string>([[8, "sha256"], [9, "sha384"], [10, "sha512"]])

type KeyPacket =
  | openpgp.PublicKeyPacket
  | openpgp.PublicSubkeyPacket
  | openpgp.SecretKeyPacket
  | openpgp.SecretSubkeyPacket

interface PacketFields {
  readonly version: number
  readonly publicKeyAlgorithm: number
  readonly hashAlgorithm: number
  readonly signatureType: number
  readonly signedHashValue: Uint8Array
  readonly params: { r?: Uint8Array; s?: Uint8Array; RS?: Uint8Array } | Promise<unknown>
  readonly unknownSubpackets: ReadonlyArray<unknown>
  readonly rawNotations: ReadonlyArray<unknown>
  readonly revocationKeyClass: number | null
  readonly created: Date | null
  readonly signatureExpirationTime: number | null
  toHash(signatureType: number, data: openpgp.LiteralDataPacket): Uint8Array
}

interface KeyParams {
  readonly algorithm: number
  readonly publicParams: { oid?: { getName(): string }; Q?: Uint8Array; A?: Uint8Array }
}

const keyObjects = new WeakMap<KeyPacket, KeyObject | null>()

/** The key's raw 32-byte Ed25519 point as a `KeyObject` (once per key packet), or null for another kind of key. */
const ed25519Key = (keyPacket: KeyPacket): KeyObject | null => {
  let key = keyObjects.get(keyPacket)
  if (key !== undefined) return key
  const { algorithm, publicParams } = keyPacket as unknown as KeyParams
  let raw: Uint8Array | undefined
  if (algorithm === ED25519) raw = publicParams.A
  else if (algorithm === EDDSA_LEGACY && publicParams.oid?.getName() === "ed25519Legacy") {
    // Legacy EdDSA points carry the 0x40 "native point" prefix.
    raw = publicParams.Q?.[0] === 0x40 ? publicParams.Q.subarray(1) : undefined
  }
  key = raw?.length === 32
    ? createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(raw).toString("base64url") }, format: "jwk" })
    : null
  keyObjects.set(keyPacket, key)
  return key
}

/** `bytes` left-padded with zeros to `size` (MPIs drop leading zero bytes). */
const padded = (bytes: Uint8Array, size: number) => {
  if (bytes.length >= size) return bytes
  const out = new Uint8Array(size)
  out.set(bytes, size - bytes.length)
  return out
}

/**
 * True when `packet` is a binary-document signature over `literal` by `keyPacket` that
 * verifies here; false means "not shown here" (another algorithm, an unusual packet, or a
 * failed check), never "invalid".
 */
export const verifiedEd25519 = (
  packet: openpgp.SignaturePacket,
  keyPacket: KeyPacket,
  literal: openpgp.LiteralDataPacket,
  now: Date
): boolean => {
  const fields = packet as unknown as PacketFields
  const digest = DIGESTS.get(fields.hashAlgorithm)
  if (
    digest === undefined || fields.version !== 4 || fields.signatureType !== openpgp.enums.signature.binary ||
    fields.publicKeyAlgorithm !== keyPacket.algorithm || !packet.issuerKeyID.equals(keyPacket.getKeyID()) ||
    fields.unknownSubpackets.length > 0 || fields.rawNotations.length > 0 || fields.revocationKeyClass !== null ||
    fields.signatureExpirationTime !== null || fields.created === null || fields.created > now ||
    fields.params instanceof Promise
  ) return false
  const key = ed25519Key(keyPacket)
  if (key === null) return false
  const { r, RS, s } = fields.params
  const signature = RS ??
    (r !== undefined && s !== undefined ? Buffer.concat([padded(r, 32), padded(s, 32)]) : undefined)
  if (signature?.length !== 64) return false
  const hashed = createHash(digest).update(fields.toHash(openpgp.enums.signature.binary, literal)).digest()
  if (hashed[0] !== fields.signedHashValue[0] || hashed[1] !== fields.signedHashValue[1]) return false
  // OpenPGP's EdDSA signs the digest itself (RFC 9580 §5.2.3.3–4).
  return verify(null, hashed, key, signature)
}
