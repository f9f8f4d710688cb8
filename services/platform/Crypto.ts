import { Context, Effect, Layer, Redacted, Schema } from "effect"
import * as NodeCrypto from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { randomBase62 } from "./Ids.ts"

/** The ciphertext is malformed, was tampered with, or belongs to another organization (or master key). */
export class DecryptError extends Schema.TaggedError<DecryptError>()("DecryptError", {
  message: Schema.String
}) {}

/** The master key is missing, malformed, or its file cannot be read or written. Never contains the key. */
export class MasterKeyError extends Schema.TaggedError<MasterKeyError>()("MasterKeyError", {
  message: Schema.String
}) {}

export const MASTER_KEY_BYTES = 32

/**
 * Secret encryption at rest and secret/token helpers.
 *
 * `encrypt`/`decrypt` use AES-256-GCM with a key per organization, derived from
 * the master key with HKDF-SHA256 (empty salt, info `canopy:org:<orgId>`), and a
 * random 12-byte IV per message. The result is
 * `v2.<iv>.<tag>.<ciphertext>` (each part unpadded base64url). The additional data
 * binds the version, the organization and the purpose (`<kind>:<owner id>`, e.g.
 * `webhook-secret:webhook_…`), so a ciphertext copied into another secret's place fails
 * to decrypt. Legacy `v1` ciphertexts (additional data `"v1"`, bound to the organization
 * only) still decrypt, for any purpose, until their owner rewrites them (`isLegacy`).
 * Changing the derivation or the master key makes existing ciphertexts undecryptable.
 */
export class Crypto extends Context.Service<Crypto, {
  /** `purpose` names the secret's kind and owner, e.g. `webhook-secret:<webhookId>`. */
  encrypt(orgId: string, purpose: string, plaintext: string): Effect.Effect<string>
  decrypt(orgId: string, purpose: string, ciphertext: string): Effect.Effect<string, DecryptError>
  /** A `v1` ciphertext, not bound to a purpose: its owner should re-encrypt it. */
  isLegacy(ciphertext: string): boolean
  /** SHA-256 of the UTF-8 secret, lowercase hex. For API tokens and similar high-entropy secrets, not passwords. */
  hashSecret(secret: string): string
  /**
   * A token with at least `bytes * 8` bits of entropy, over `[A-Za-z0-9]` only:
   * `ceil(bytes * 8 / log2(62))` characters (32 bytes -> 43 characters), each
   * uniformly chosen (rejection sampling, no modulo bias).
   */
  randomToken(bytes: number): string
}>()("canopy/platform/Crypto") {
  static layer(masterKey: Uint8Array | Redacted.Redacted<Uint8Array>): Layer.Layer<Crypto, MasterKeyError> {
    return Layer.effect(
      Crypto,
      Effect.gen(function*() {
        const raw = Redacted.isRedacted(masterKey) ? Redacted.value(masterKey) : masterKey
        if (raw.byteLength !== MASTER_KEY_BYTES) {
          return yield* new MasterKeyError({ message: `The master key must be ${MASTER_KEY_BYTES} bytes` })
        }
        // private copy, so that later changes to the caller's array do not affect us
        const key = Buffer.from(raw)
        return Crypto.of(makeCrypto(key))
      })
    )
  }
}

/** SHA-256 in hex: how API keys and other high-entropy tokens are stored (not for passwords). */
export const sha256Hex = (secret: string): string =>
  // One-shot: no Hash object per call (runs on every authenticated request).
  NodeCrypto.hash("sha256", secret, "hex")

const VERSION = "v2"
const LEGACY_VERSION = "v1"
const IV_BYTES = 12
const TAG_BYTES = 16
const LEGACY_AAD = Buffer.from(LEGACY_VERSION, "utf8")
/** JSON keeps the parts apart: no organization/purpose pair can pass for another. */
const boundAad = (orgId: string, purpose: string) => Buffer.from(JSON.stringify([VERSION, orgId, purpose]), "utf8")
const EMPTY_SALT = Buffer.alloc(0)

const makeCrypto = (masterKey: Buffer): Crypto["Service"] => {
  const orgKey = (orgId: string): Buffer =>
    Buffer.from(NodeCrypto.hkdfSync("sha256", masterKey, EMPTY_SALT, `canopy:org:${orgId}`, 32))

  const encrypt = (orgId: string, purpose: string, plaintext: string): Effect.Effect<string> =>
    Effect.sync(() => {
      const iv = NodeCrypto.randomBytes(IV_BYTES)
      const cipher = NodeCrypto.createCipheriv("aes-256-gcm", orgKey(orgId), iv, { authTagLength: TAG_BYTES })
      cipher.setAAD(boundAad(orgId, purpose))
      const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
      const tag = cipher.getAuthTag()
      return [VERSION, iv.toString("base64url"), tag.toString("base64url"), ciphertext.toString("base64url")].join(".")
    })

  const decrypt = (orgId: string, purpose: string, ciphertext: string): Effect.Effect<string, DecryptError> =>
    Effect.suspend(() => {
      const parts = ciphertext.split(".")
      if (parts.length !== 4 || (parts[0] !== VERSION && parts[0] !== LEGACY_VERSION)) {
        return Effect.fail(new DecryptError({ message: "Unsupported ciphertext format" }))
      }
      const iv = decodeBase64Url(parts[1])
      const tag = decodeBase64Url(parts[2])
      const body = decodeBase64Url(parts[3])
      if (iv === undefined || tag === undefined || body === undefined) {
        return Effect.fail(new DecryptError({ message: "Malformed ciphertext" }))
      }
      if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) {
        return Effect.fail(new DecryptError({ message: "Malformed ciphertext" }))
      }
      try {
        const decipher = NodeCrypto.createDecipheriv("aes-256-gcm", orgKey(orgId), iv, { authTagLength: TAG_BYTES })
        decipher.setAAD(parts[0] === VERSION ? boundAad(orgId, purpose) : LEGACY_AAD)
        decipher.setAuthTag(tag)
        const plaintext = Buffer.concat([decipher.update(body), decipher.final()])
        return Effect.succeed(plaintext.toString("utf8"))
      } catch {
        return Effect.fail(
          new DecryptError({
            message: "Ciphertext failed authentication (tampered, or another organization's or purpose's)"
          })
        )
      }
    })

  const hashSecret = sha256Hex

  const randomToken = (bytes: number): string => {
    if (!Number.isSafeInteger(bytes) || bytes <= 0) {
      throw new RangeError(`randomToken: bytes must be a positive integer, got ${bytes}`)
    }
    return randomBase62(Math.ceil((bytes * 8) / Math.log2(62)))
  }

  const isLegacy = (ciphertext: string): boolean => ciphertext.startsWith(`${LEGACY_VERSION}.`)

  return { encrypt, decrypt, isLegacy, hashSecret, randomToken }
}

/** Strict, canonical unpadded base64url, so that no two strings decode to the same bytes. */
const decodeBase64Url = (text: string): Buffer | undefined => {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined
  const bytes = Buffer.from(text, "base64url")
  return bytes.toString("base64url") === text ? bytes : undefined
}

/**
 * Parses a textual master key. Accepted formats (surrounding whitespace is ignored):
 * - hex: exactly 64 hex digits, e.g. the output of `openssl rand -hex 32`;
 * - base64: 43 characters plus optional `=` padding, standard (`+/`) or URL-safe
 *   (`-_`) alphabet, decoding to 32 bytes, e.g. the output of `openssl rand -base64 32`.
 * 64 hex digits would be valid base64 too, but of 48 bytes, so the two cannot be confused.
 */
export const parseMasterKey = (text: string): Uint8Array | undefined => {
  const trimmed = text.trim()
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) {
    return new Uint8Array(Buffer.from(trimmed, "hex"))
  }
  if (/^[A-Za-z0-9+/]{43}=?$/.test(trimmed) || /^[A-Za-z0-9_-]{43}=?$/.test(trimmed)) {
    const bytes = Buffer.from(trimmed, "base64")
    return bytes.length === MASTER_KEY_BYTES ? new Uint8Array(bytes) : undefined
  }
  return undefined
}

/**
 * Resolves the master key:
 * 1. `masterKeyFromEnv` (the value of the `MASTER_KEY` environment variable,
 *    read by the caller), in one of the formats of {@link parseMasterKey};
 * 2. else `<dataDir>/master.key` (the key as base64 text, as written here; 32
 *    raw bytes are accepted as well);
 * 3. else 32 fresh random bytes, written to `<dataDir>/master.key` with mode 0600.
 *    The file is created with a hard link from a temporary file, so concurrent
 *    starters never overwrite each other's key: the loser reads the winner's.
 *
 * Losing this key loses every secret encrypted with it.
 */
export const loadOrCreateMasterKey = Effect.fn("loadOrCreateMasterKey")(function*(
  dataDir: string,
  masterKeyFromEnv?: string | Redacted.Redacted<string> | undefined
): Effect.fn.Return<Redacted.Redacted<Uint8Array>, MasterKeyError> {
  if (masterKeyFromEnv !== undefined) {
    const text = Redacted.isRedacted(masterKeyFromEnv) ? Redacted.value(masterKeyFromEnv) : masterKeyFromEnv
    if (text.trim() !== "") {
      const key = parseMasterKey(text)
      if (key === undefined) {
        return yield* new MasterKeyError({
          message: "MASTER_KEY must be 32 bytes, encoded as 64 hex digits or as base64"
        })
      }
      return Redacted.make(key, { label: "MasterKey" })
    }
  }

  const file = Path.join(Path.resolve(dataDir), "master.key")
  const result = yield* Effect.tryPromise({
    try: () => readOrCreateKeyFile(file),
    catch: (error) =>
      error instanceof MasterKeyError
        ? error
        : new MasterKeyError({ message: `Cannot read or create ${file}: ${describeFsError(error)}` })
  })
  if (result.created) {
    yield* Effect.logInfo(`Generated a new master key in ${file}; back it up, secrets cannot be decrypted without it`)
  } else if ((result.mode & 0o077) !== 0) {
    yield* Effect.logWarning(`${file} is accessible by other users (mode ${(result.mode & 0o777).toString(8)})`)
  }
  return Redacted.make(result.key, { label: "MasterKey" })
})

const readKeyFile = async (file: string): Promise<{ key: Uint8Array; mode: number; created: false } | undefined> => {
  let handle: Fs.FileHandle
  try {
    handle = await Fs.open(file, "r")
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined
    throw error
  }
  try {
    const [contents, stat] = await Promise.all([handle.readFile(), handle.stat()])
    const key = parseMasterKey(contents.toString("utf8")) ??
      (contents.length === MASTER_KEY_BYTES ? new Uint8Array(contents) : undefined)
    if (key === undefined) {
      throw new MasterKeyError({ message: `${file} does not contain a 32-byte key (base64, hex or raw)` })
    }
    return { key, mode: stat.mode, created: false }
  } finally {
    await handle.close()
  }
}

const readOrCreateKeyFile = async (
  file: string
): Promise<{ key: Uint8Array; mode: number; created: boolean }> => {
  const existing = await readKeyFile(file)
  if (existing !== undefined) return existing

  await Fs.mkdir(Path.dirname(file), { recursive: true, mode: 0o700 })
  const key = new Uint8Array(NodeCrypto.randomBytes(MASTER_KEY_BYTES))
  const temp = `${file}.${NodeCrypto.randomBytes(6).toString("hex")}.tmp`
  try {
    const handle = await Fs.open(temp, "wx", 0o600)
    try {
      await handle.chmod(0o600)
      await handle.writeFile(`${Buffer.from(key).toString("base64")}\n`, "utf8")
      await handle.sync()
    } finally {
      await handle.close()
    }
    try {
      // link fails with EEXIST instead of replacing an existing file: create-if-absent, atomically
      await Fs.link(temp, file).catch((error: NodeJS.ErrnoException) => {
        // file systems without hard links: exclusive copy (not atomic for readers, still never overwrites)
        if (error.code === "EPERM" || error.code === "ENOTSUP" || error.code === "ENOSYS") {
          return Fs.copyFile(temp, file, Fs.constants.COPYFILE_EXCL)
        }
        throw error
      })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
      const winner = await readKeyFile(file)
      if (winner === undefined) throw error
      return winner
    }
  } finally {
    await Fs.rm(temp, { force: true })
  }
  return { key, mode: 0o600, created: true }
}

const describeFsError = (error: unknown): string => {
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  return code ?? (error instanceof Error ? error.message : String(error))
}
