import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import {
  Crypto,
  DecryptError,
  loadOrCreateMasterKey,
  MasterKeyError,
  parseMasterKey
} from "../../services/platform/Crypto.ts"
import { legacyV1Ciphertext } from "../support/legacyCiphertext.ts"
import { tempDir } from "../support/tempDir.ts"

const masterKey = new Uint8Array(NodeCrypto.randomBytes(32))
const CryptoTest = Crypto.layer(Redacted.make(masterKey))

const withCrypto = <A, E>(
  layer: Layer.Layer<Crypto, MasterKeyError>,
  f: (crypto: Crypto["Service"]) => Effect.Effect<A, E>
) =>
  Effect.gen(function*() {
    return yield* f(yield* Crypto)
  }).pipe(Effect.provide(layer))

const keyDir = tempDir("canopy-crypto-")

/** The purpose most tests bind to. */
const P = "test-secret:tst_1"

/** Flips one bit of the byte at `index` of the dot-separated part `part` of a ciphertext. */
const flipBit = (ciphertext: string, part: number, index = 0): string => {
  const parts = ciphertext.split(".")
  const bytes = Buffer.from(parts[part], "base64url")
  bytes[index] ^= 0x01
  parts[part] = bytes.toString("base64url")
  return parts.join(".")
}

const legacyV1 = (orgId: string, plaintext: string) => legacyV1Ciphertext(masterKey, orgId, plaintext)

describe("Crypto", () => {
  it.effect("encrypts and decrypts for the same organization", () =>
    Effect.gen(function*() {
      const crypto = yield* Crypto
      for (const plaintext of ["hunter2", "", "ünïcödé ✓ 🔑", "x".repeat(100_000)]) {
        const ciphertext = yield* crypto.encrypt("org_1", P, plaintext)
        expect(ciphertext).toMatch(/^v2\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]*$/)
        expect(ciphertext).not.toContain(plaintext === "" ? "\u0000" : plaintext)
        expect(yield* crypto.decrypt("org_1", P, ciphertext)).toBe(plaintext)
      }
    }).pipe(Effect.provide(CryptoTest)))

  it.effect("produces a different ciphertext every time (random IV)", () =>
    Effect.gen(function*() {
      const crypto = yield* Crypto
      const ciphertexts = yield* Effect.forEach(Array.from({ length: 20 }), () => crypto.encrypt("org_1", P, "same"))
      expect(new Set(ciphertexts).size).toBe(20)
      expect(new Set(ciphertexts.map((c) => c.split(".")[1])).size).toBe(20)
      for (const ciphertext of ciphertexts) {
        expect(yield* crypto.decrypt("org_1", P, ciphertext)).toBe("same")
      }
    }).pipe(Effect.provide(CryptoTest)))

  it.effect("another organization cannot decrypt", () =>
    Effect.gen(function*() {
      const crypto = yield* Crypto
      const ciphertext = yield* crypto.encrypt("org_1", P, "secret of org 1")
      const error = yield* Effect.flip(crypto.decrypt("org_2", P, ciphertext))
      expect(error).toBeInstanceOf(DecryptError)
      expect(error._tag).toBe("DecryptError")
      expect(error.message).not.toContain("secret of org 1")
    }).pipe(Effect.provide(CryptoTest)))

  it.effect("a ciphertext decrypts only for the purpose it was made for", () =>
    Effect.gen(function*() {
      const crypto = yield* Crypto
      const ciphertext = yield* crypto.encrypt("org_1", "webhook-secret:wh_1", "s3cret")
      expect(yield* crypto.decrypt("org_1", "webhook-secret:wh_1", ciphertext)).toBe("s3cret")
      for (const purpose of ["webhook-secret:wh_2", "ci-variable:wh_1", "webhook-secret:", ""]) {
        const error = yield* Effect.flip(crypto.decrypt("org_1", purpose, ciphertext))
        expect(error).toBeInstanceOf(DecryptError)
      }
      // the organization and the purpose cannot be shifted into each other
      const shifted = yield* crypto.encrypt("org_1:a", "b", "x")
      expect(yield* Effect.flip(crypto.decrypt("org_1", "a:b", shifted))).toBeInstanceOf(DecryptError)
    }).pipe(Effect.provide(CryptoTest)))

  it.effect("legacy v1 ciphertexts still decrypt (any purpose of their organization) and are flagged for upgrade", () =>
    Effect.gen(function*() {
      const crypto = yield* Crypto
      const legacy = legacyV1("org_1", "old secret")
      expect(crypto.isLegacy(legacy)).toBe(true)
      expect(yield* crypto.decrypt("org_1", P, legacy)).toBe("old secret")
      expect(yield* Effect.flip(crypto.decrypt("org_2", P, legacy))).toBeInstanceOf(DecryptError)
      const upgraded = yield* crypto.encrypt("org_1", P, yield* crypto.decrypt("org_1", P, legacy))
      expect(crypto.isLegacy(upgraded)).toBe(false)
      expect(yield* crypto.decrypt("org_1", P, upgraded)).toBe("old secret")
    }).pipe(Effect.provide(CryptoTest)))

  it.effect("another master key cannot decrypt", () =>
    Effect.gen(function*() {
      const ciphertext = yield* withCrypto(CryptoTest, (c) => c.encrypt("org_1", P, "payload"))
      const otherKey = Crypto.layer(new Uint8Array(NodeCrypto.randomBytes(32)))
      const error = yield* Effect.flip(withCrypto(otherKey, (c) => c.decrypt("org_1", P, ciphertext)))
      expect(error).toBeInstanceOf(DecryptError)
    }))

  it.effect("rejects tampered or malformed ciphertexts", () =>
    Effect.gen(function*() {
      const crypto = yield* Crypto
      const ciphertext = yield* crypto.encrypt("org_1", P, "do not touch")
      const tampered = [
        flipBit(ciphertext, 1), // IV
        flipBit(ciphertext, 2), // tag
        flipBit(ciphertext, 3), // body
        flipBit(ciphertext, 3, 11),
        ciphertext.replace(/^v2\./, "v1."),
        ciphertext.replace(/^v2\./, "v3."),
        ciphertext.split(".").slice(0, 3).join("."),
        `${ciphertext}.extra`,
        ciphertext.slice(0, -2),
        "not a ciphertext",
        ""
      ]
      for (const candidate of tampered) {
        expect(candidate).not.toBe(ciphertext)
        const error = yield* Effect.flip(crypto.decrypt("org_1", P, candidate))
        expect(error).toBeInstanceOf(DecryptError)
      }
      // the original still decrypts
      expect(yield* crypto.decrypt("org_1", P, ciphertext)).toBe("do not touch")
    }).pipe(Effect.provide(CryptoTest)))

  it.effect("hashSecret is deterministic SHA-256 hex", () =>
    Effect.gen(function*() {
      const crypto = yield* Crypto
      for (const secret of ["", "token_abc", "ünïcödé"]) {
        const expected = NodeCrypto.createHash("sha256").update(Buffer.from(secret, "utf8")).digest("hex")
        expect(crypto.hashSecret(secret)).toBe(expected)
        expect(crypto.hashSecret(secret)).toBe(crypto.hashSecret(secret))
      }
      expect(crypto.hashSecret("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
      expect(crypto.hashSecret("a")).not.toBe(crypto.hashSecret("b"))
    }).pipe(Effect.provide(CryptoTest)))

  it.effect("randomToken is base62 of the expected length and unique", () =>
    Effect.gen(function*() {
      const crypto = yield* Crypto
      for (const bytes of [1, 16, 24, 32, 64]) {
        const expectedLength = Math.ceil((bytes * 8) / Math.log2(62))
        const token = crypto.randomToken(bytes)
        expect(token).toMatch(/^[A-Za-z0-9]+$/)
        expect(token.length).toBe(expectedLength)
      }
      expect(crypto.randomToken(32).length).toBe(43)
      const tokens = Array.from({ length: 1000 }, () => crypto.randomToken(16))
      expect(new Set(tokens).size).toBe(1000)
      // all 62 characters show up in a large sample, nothing else does
      const chars = new Set(Array.from({ length: 200 }, () => crypto.randomToken(32)).join(""))
      expect(chars.size).toBe(62)
      expect(() => crypto.randomToken(0)).toThrow(RangeError)
    }).pipe(Effect.provide(CryptoTest)))

  it.effect("the layer rejects a key of the wrong size", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(Crypto.layer(new Uint8Array(16))))
      expect(error).toBeInstanceOf(MasterKeyError)
    }))
})

describe("loadOrCreateMasterKey", () => {
  it.effect("creates master.key with mode 0600 and reuses it", () =>
    Effect.gen(function*() {
      const dir = Path.join(yield* keyDir, "data")
      const first = yield* loadOrCreateMasterKey(dir)
      const file = Path.join(dir, "master.key")
      const stat = Fs.statSync(file)
      expect(stat.mode & 0o777).toBe(0o600)
      expect(Redacted.value(first).byteLength).toBe(32)
      expect(String(first)).not.toContain(Buffer.from(Redacted.value(first)).toString("base64"))
      // the file holds the key as base64, no temporary files are left behind
      expect(Fs.readFileSync(file, "utf8").trim()).toBe(Buffer.from(Redacted.value(first)).toString("base64"))
      expect(Fs.readdirSync(dir)).toEqual(["master.key"])

      const second = yield* loadOrCreateMasterKey(dir)
      expect(Buffer.from(Redacted.value(second)).equals(Buffer.from(Redacted.value(first)))).toBe(true)
      expect(Fs.statSync(file).mtimeMs).toBe(stat.mtimeMs)

      // a key loaded from the file decrypts what the first one encrypted
      const ciphertext = yield* withCrypto(Crypto.layer(first), (c) => c.encrypt("org", P, "kept"))
      const plaintext = yield* withCrypto(Crypto.layer(second), (c) => c.decrypt("org", P, ciphertext))
      expect(plaintext).toBe("kept")
    }))

  it.effect("concurrent first starts agree on one key", () =>
    Effect.gen(function*() {
      const dir = yield* keyDir
      const keys = yield* Effect.forEach(Array.from({ length: 8 }), () => loadOrCreateMasterKey(dir), {
        concurrency: "unbounded"
      })
      const onDisk = Fs.readFileSync(Path.join(dir, "master.key"), "utf8").trim()
      for (const key of keys) {
        expect(Buffer.from(Redacted.value(key)).toString("base64")).toBe(onDisk)
      }
      expect(Fs.readdirSync(dir)).toEqual(["master.key"])
    }))

  it.effect("prefers MASTER_KEY given by the caller, as hex or base64", () =>
    Effect.gen(function*() {
      const dir = yield* keyDir
      const raw = NodeCrypto.randomBytes(32)
      for (
        const text of [
          raw.toString("hex"),
          raw.toString("hex").toUpperCase(),
          raw.toString("base64"),
          raw.toString("base64url"),
          ` ${raw.toString("base64")}\n`
        ]
      ) {
        const key = yield* loadOrCreateMasterKey(dir, Redacted.make(text))
        expect(Buffer.from(Redacted.value(key)).equals(raw)).toBe(true)
        const plain = yield* loadOrCreateMasterKey(dir, text)
        expect(Buffer.from(Redacted.value(plain)).equals(raw)).toBe(true)
      }
      // nothing was written when the key came from the environment
      expect(Fs.existsSync(Path.join(dir, "master.key"))).toBe(false)
    }))

  it.effect("rejects a malformed MASTER_KEY without echoing it", () =>
    Effect.gen(function*() {
      const dir = yield* keyDir
      for (
        const bad of [
          "too-short",
          NodeCrypto.randomBytes(16).toString("hex"),
          NodeCrypto.randomBytes(48).toString("base64")
        ]
      ) {
        const error = yield* Effect.flip(loadOrCreateMasterKey(dir, bad))
        expect(error).toBeInstanceOf(MasterKeyError)
        expect(error.message).not.toContain(bad)
      }
      expect(parseMasterKey("g".repeat(64))).toBeUndefined()
    }))

  it.effect("rejects a corrupt master.key instead of replacing it", () =>
    Effect.gen(function*() {
      const dir = yield* keyDir
      const file = Path.join(dir, "master.key")
      Fs.writeFileSync(file, "garbage\n", { mode: 0o600 })
      const error = yield* Effect.flip(loadOrCreateMasterKey(dir))
      expect(error).toBeInstanceOf(MasterKeyError)
      expect(Fs.readFileSync(file, "utf8")).toBe("garbage\n")
    }))
})
