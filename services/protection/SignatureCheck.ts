/**
 * OpenPGP signature verification of commit payloads, with nothing but `openpgp` imported:
 * it runs in the server and in the verification workers (`SignatureWorkers.ts`), which
 * load this file without the app around it.
 */
import * as openpgp from "openpgp"

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
    const signature = await openpgp.readSignature({ binarySignature: signed.signature })
    const packet = signature.packets[0]
    if (signature.packets.length !== 1 || packet === undefined) return false
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
