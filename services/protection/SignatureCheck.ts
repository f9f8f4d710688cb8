/**
 * OpenPGP signature verification of commit payloads, with nothing but `openpgp` imported:
 * it runs in the server and in the verification workers (`SignatureWorkers.ts`), which
 * load this file without the app around it.
 */
import * as openpgp from "openpgp"
import { verifiedEd25519 } from "./Ed25519Signatures.ts"

/** The bytes git signed and the signature's bytes (de-armored). */
export interface SignedBytes {
  readonly payload: Uint8Array
  readonly signature: Uint8Array
}

/** Parsed keys by armored text: a key is parsed once per process (and worker), not once per push. */
const parsed = new Map<string, Promise<openpgp.PublicKey>>()

export const parsePublicKey = (armored: string): Promise<openpgp.PublicKey> => {
  let key = parsed.get(armored)
  if (key === undefined) {
    key = openpgp.readKey({ armoredKey: armored }).then((read) => {
      if (read.isPrivate()) throw new Error("a private key")
      return read as openpgp.PublicKey
    })
    key.catch(() => parsed.delete(armored))
    if (parsed.size > 5_000) parsed.clear()
    parsed.set(armored, key)
  }
  return key
}

const keyIdsOf = (key: openpgp.PublicKey) => [key.getKeyID(), ...key.getSubkeys().map((sub) => sub.getKeyID())]

interface LiteralBytes {
  setBytes(bytes: Uint8Array, format: openpgp.enums.literal): void
}

type SigningKey = Awaited<ReturnType<openpgp.PublicKey["getSigningKey"]>>

const SIGNATURE_TAG = 2

/**
 * The body of `bytes` when they are exactly one signature packet (RFC 9580 §4.2: old or new
 * header format, no partial lengths), else undefined. Read without `openpgp.readSignature`,
 * whose stream-based packet reader costs more than the packet's own parsing.
 */
const signaturePacketBody = (bytes: Uint8Array): Uint8Array | undefined => {
  const first = bytes[0]
  if (bytes.length < 2 || (first & 0x80) === 0) return undefined
  let tag: number
  let headerLength: number
  let bodyLength: number
  if ((first & 0x40) !== 0) {
    tag = first & 0x3f
    const octet = bytes[1]
    if (octet < 192) [headerLength, bodyLength] = [2, octet]
    else if (octet < 224) [headerLength, bodyLength] = [3, ((octet - 192) << 8) + (bytes[2] ?? 0) + 192]
    else if (octet === 255) {
      ;[headerLength, bodyLength] = [6, new DataView(bytes.buffer, bytes.byteOffset + 2).getUint32(0)]
    } else return undefined
  } else {
    tag = (first >> 2) & 0x0f
    const lengthType = first & 0x03
    if (lengthType === 3) return undefined
    headerLength = 1 + (1 << lengthType)
    bodyLength = 0
    for (let i = 1; i < headerLength; i++) bodyLength = bodyLength * 256 + (bytes[i] ?? 0)
  }
  if (tag !== SIGNATURE_TAG || headerLength + bodyLength !== bytes.length) return undefined
  return bytes.subarray(headerLength)
}

/**
 * Whether the signature verifies with the registered key that issued it (no other key is
 * tried). The signing (sub)key is validated once per batch (`signingKeys`: self-signatures,
 * expiry, revocation); each commit then costs one packet verification, not a full
 * `openpgp.verify` that would re-validate the key every time.
 */
const verifies = async (
  signed: SignedBytes,
  keysById: ReadonlyMap<string, openpgp.PublicKey>,
  signingKeys: Map<string, Promise<SigningKey | undefined>>
) => {
  try {
    const body = signaturePacketBody(signed.signature)
    if (body === undefined) return false
    const packet = new openpgp.SignaturePacket()
    packet.read(body)
    const issuer = packet.issuerKeyID.toHex()
    const key = keysById.get(issuer)
    if (key === undefined) return false
    let signingKey = signingKeys.get(issuer)
    if (signingKey === undefined) {
      signingKey = key.getSigningKey(packet.issuerKeyID).catch(() => undefined)
      signingKeys.set(issuer, signingKey)
    }
    const validKey = await signingKey
    if (validKey === undefined) return false
    const literal = new openpgp.LiteralDataPacket() // `setBytes` is public in openpgp's documented API; its .d.ts marks it private.
    ;(literal as unknown as LiteralBytes).setBytes(signed.payload, openpgp.enums.literal.binary)
    if (verifiedEd25519(packet, validKey.keyPacket, literal, new Date())) return true
    // Throws unless the signature is a valid binary-document signature by this key over the payload.
    await packet.verify(validKey.keyPacket, openpgp.enums.signature.binary, literal)
    return true
  } catch {
    return false
  }
}

/**
 * For each signed payload, whether its signature verifies against one of `armoredKeys`
 * (looked up by the signature's issuer key id). Unreadable keys are skipped.
 */
export const verifySignatures = async (
  items: ReadonlyArray<SignedBytes>,
  armoredKeys: ReadonlyArray<string>
): Promise<Array<boolean>> => {
  const keys = await Promise.all(armoredKeys.map((armored) => parsePublicKey(armored).catch(() => undefined)))
  const keysById = new Map<string, openpgp.PublicKey>()
  for (const key of keys) {
    if (key !== undefined) { for (const id of keyIdsOf(key)) keysById.set(id.toHex(), key) }
  }
  if (keysById.size === 0) return items.map(() => false)
  const signingKeys = new Map<string, Promise<SigningKey | undefined>>()
  return Promise.all(items.map((item) => verifies(item, keysById, signingKeys)))
}
