import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as openpgp from "openpgp"
import { verifiedEd25519 } from "../../services/protection/Ed25519Signatures.ts"
import { verifySignatures } from "../../services/protection/SignatureCheck.ts"
import { gpgKey, gpgSign, type GpgTestKey } from "./support.ts"

/** What openpgp's own high-level `verify` says, independently of our code. */
const openpgpVerdict = async (payload: Uint8Array, signature: Uint8Array, armoredKey: string) => {
  const { signatures } = await openpgp.verify({
    message: await openpgp.createMessage({ binary: payload }),
    signature: await openpgp.readSignature({ binarySignature: signature }),
    verificationKeys: await openpgp.readKey({ armoredKey })
  })
  return signatures[0].verified.then(() => true, () => false)
}

/** Whether the Node-crypto path itself accepts (it declines what it does not handle). */
const fastVerdict = async (payload: Uint8Array, signature: Uint8Array, armoredKey: string) => {
  const packet = (await openpgp.readSignature({ binarySignature: signature })).packets[0] as openpgp.SignaturePacket
  const key = await openpgp.readKey({ armoredKey })
  const literal = new openpgp.LiteralDataPacket()
  ;(literal as unknown as { setBytes(bytes: Uint8Array, format: openpgp.enums.literal): void }).setBytes(
    payload,
    openpgp.enums.literal.binary
  )
  return verifiedEd25519(packet, key.keyPacket, literal, new Date())
}

const verdicts = (payload: Uint8Array, signature: Uint8Array, key: GpgTestKey) =>
  Effect.promise(async () => ({
    ours: (await verifySignatures([{ payload, signature }], [key.armored]))[0],
    openpgp: await openpgpVerdict(payload, signature, key.armored),
    fast: await fastVerdict(payload, signature, key.armored)
  }))

const payload = new TextEncoder().encode(
  "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@example.com> 1 +0000\n\nsigned\n"
)

describe("Ed25519 signatures through Node's crypto", () => {
  it.effect(
    "a plain gpg Ed25519 signature is verified by the fast path; a changed payload or another key is not",
    () =>
      Effect.gen(function*() {
        const key = yield* gpgKey("Fast <fast@example.com>")
        const other = yield* gpgKey("Other <other@example.com>")
        const signature = yield* gpgSign(key, payload)
        expect(yield* verdicts(payload, signature, key)).toEqual({ ours: true, openpgp: true, fast: true })
        const changed = new Uint8Array([...payload, 0x78])
        expect(yield* verdicts(changed, signature, key)).toEqual({ ours: false, openpgp: false, fast: false })
        // Signed by `other`: neither its id nor its point match `key`.
        const foreign = yield* gpgSign(other, payload)
        expect(yield* Effect.promise(() => fastVerdict(payload, foreign, key.armored))).toBe(false)
        expect(yield* Effect.promise(() => verifySignatures([{ payload, signature: foreign }], [key.armored])))
          .toEqual([false])
      }).pipe(Effect.scoped),
    { timeout: 60_000 }
  )

  it.effect("what the fast path does not handle goes to openpgp, whose verdict stands", () =>
    Effect.gen(function*() {
      const key = yield* gpgKey("Options <options@example.com>")
      // A signature that expires: the fast path declines, openpgp accepts it while it is valid.
      const expiring = yield* gpgSign(key, payload, ["--default-sig-expire", "1y"])
      expect(yield* verdicts(payload, expiring, key)).toEqual({ ours: true, openpgp: true, fast: false })
      // A critical notation openpgp does not know: declined here, refused by openpgp.
      const critical = yield* gpgSign(key, payload, ["--sig-notation", "!policy@example.com=strict"])
      expect(yield* verdicts(payload, critical, key)).toEqual({ ours: false, openpgp: false, fast: false })
      // A non-critical notation: declined here, accepted by openpgp.
      const noted = yield* gpgSign(key, payload, ["--sig-notation", "note@example.com=hello"])
      expect(yield* verdicts(payload, noted, key)).toEqual({ ours: true, openpgp: true, fast: false })
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.effect("an RSA key's signatures are verified by openpgp", () =>
    Effect.gen(function*() {
      const key = yield* gpgKey("Rsa <rsa@example.com>", "rsa2048")
      const signature = yield* gpgSign(key, payload)
      expect(yield* verdicts(payload, signature, key)).toEqual({ ours: true, openpgp: true, fast: false })
      expect(yield* verdicts(new Uint8Array([...payload, 0x78]), signature, key))
        .toEqual({ ours: false, openpgp: false, fast: false })
    }).pipe(Effect.scoped), { timeout: 60_000 })
})
