import { Effect } from "effect"
import * as openpgp from "openpgp"
import { runGit } from "../git/GitProcess.ts"
import { parsePublicKey } from "./GpgKeys.ts"

/** A commit object split into the bytes that were signed and its armored signature. */
interface SignedPayload {
  readonly payload: Uint8Array
  readonly signature: string
}

/**
 * Git signs the commit object without its `gpgsig` header (the header's value continues on
 * lines starting with a space); the header block ends at the first empty line.
 */
export const splitSignature = (raw: Buffer): SignedPayload | undefined => {
  const headerEnd = raw.indexOf("\n\n")
  const headers = (headerEnd === -1 ? raw : raw.subarray(0, headerEnd)).toString("utf8")
  const lines = headers.split("\n")
  const start = lines.findIndex((line) => line.startsWith("gpgsig "))
  if (start === -1) return undefined
  let end = start + 1
  while (end < lines.length && lines[end].startsWith(" ")) end++
  const signature = [lines[start].slice("gpgsig ".length), ...lines.slice(start + 1, end).map((l) => l.slice(1))]
    .join("\n")
  const kept = [...lines.slice(0, start), ...lines.slice(end)].join("\n")
  const body = headerEnd === -1 ? Buffer.alloc(0) : raw.subarray(headerEnd)
  return { payload: Buffer.concat([Buffer.from(kept, "utf8"), body]), signature }
}

/** Reads raw commit objects with one `git cat-file --batch`; missing or non-commit ids are left out. */
const readCommits = (gitDir: string, env: Readonly<Record<string, string>>, shas: ReadonlyArray<string>) =>
  Effect.map(
    runGit({ gitDir, env, args: ["cat-file", "--batch"], stdin: shas.map((sha) => `${sha}\n`).join("") }),
    (out) => {
      const commits = new Map<string, Buffer>()
      let at = 0
      while (at < out.length) {
        const lineEnd = out.indexOf(10, at)
        if (lineEnd === -1) break
        const [sha, type, size] = out.subarray(at, lineEnd).toString("utf8").split(" ")
        if (type === "missing" || size === undefined) {
          at = lineEnd + 1
          continue
        }
        const length = Number(size)
        if (type === "commit") commits.set(sha, out.subarray(lineEnd + 1, lineEnd + 1 + length))
        at = lineEnd + 1 + length + 1
      }
      return commits
    }
  )

/**
 * The bytes of an ASCII-armored PGP signature (RFC 4880 §6.2): the base64 body between the
 * header block and the `=` checksum line; undefined when it is not a signature block.
 */
export const dearmor = (armored: string): Uint8Array | undefined => {
  const lines = armored.trim().split(/\r?\n/)
  if (lines[0] !== "-----BEGIN PGP SIGNATURE-----" || lines.at(-1) !== "-----END PGP SIGNATURE-----") return undefined
  const blank = lines.indexOf("")
  const body = lines.slice(blank === -1 ? 1 : blank + 1, -1).filter((line) => !line.startsWith("="))
  const bytes = Buffer.from(body.join(""), "base64")
  return bytes.length === 0 ? undefined : bytes
}

/** A new commit as `git rev-list --parents --header` shows it: id, parents and the object rebuilt. */
export interface WalkedCommit {
  readonly sha: string
  readonly parents: ReadonlyArray<string>
  /**
   * The commit object rebuilt from the walk (headers verbatim, message lines un-indented).
   * Git strips trailing spaces from message lines there, so a rebuilt object may differ
   * from the stored one: a signature that fails on it is checked again on `cat-file`'s bytes.
   */
  readonly object: Buffer
}

/** Parses `git rev-list --parents --header` output (NUL-terminated records). */
export const parseWalk = (out: Buffer): ReadonlyArray<WalkedCommit> => {
  const commits: Array<WalkedCommit> = []
  let at = 0
  while (at < out.length) {
    let end = out.indexOf(0, at)
    if (end === -1) end = out.length
    const record = out.subarray(at, end)
    at = end + 1
    const firstLine = record.indexOf(10)
    if (firstLine === -1) continue
    const [sha, ...parents] = record.subarray(0, firstLine).toString("utf8").split(" ")
    const rest = record.subarray(firstLine + 1)
    const headerEnd = rest.indexOf("\n\n")
    const headers = headerEnd === -1 ? rest : rest.subarray(0, headerEnd + 1)
    const message = headerEnd === -1 ? "" : rest.subarray(headerEnd + 2).toString("utf8")
    const lines = message.endsWith("\n") ? message.slice(0, -1).split("\n") : message.split("\n")
    const body = message === ""
      ? ""
      : lines.map((line) => `${line.startsWith("    ") ? line.slice(4) : line}\n`).join("")
    commits.push({
      sha,
      parents,
      object: headerEnd === -1 ? Buffer.from(headers) : Buffer.concat([headers, Buffer.from(`\n${body}`, "utf8")])
    })
  }
  return commits
}

const keyIdsOf = (key: openpgp.PublicKey) => [key.getKeyID(), ...key.getSubkeys().map((sub) => sub.getKeyID())]

interface LiteralBytes {
  setBytes(bytes: Uint8Array, format: openpgp.enums.literal): void
}

type SigningKey = Awaited<ReturnType<openpgp.PublicKey["getSigningKey"]>>

/**
 * Whether the signature verifies with the registered key that issued it (no other key is
 * tried). The signing (sub)key is validated once per call (`signingKeys`: self-signatures,
 * expiry, revocation); each commit then costs one packet verification, not a full
 * `openpgp.verify` that would re-validate the key every time.
 */
const verifies = async (
  signed: SignedPayload,
  keysById: ReadonlyMap<string, openpgp.PublicKey>,
  signingKeys: Map<string, Promise<SigningKey | undefined>>
) => {
  try {
    const binary = dearmor(signed.signature)
    if (binary === undefined) return false
    // openpgp's armor reader is stream-based and costs more than the verification itself.
    const signature = await openpgp.readSignature({ binarySignature: binary })
    const packet = signature.packets[0]
    if (signature.packets.length !== 1 || packet === undefined) return false
    const issuer = packet.issuerKeyID
    const key = keysById.get(issuer.toHex())
    if (key === undefined) return false
    let signingKey = signingKeys.get(issuer.toHex())
    if (signingKey === undefined) {
      signingKey = key.getSigningKey(issuer).catch(() => undefined)
      signingKeys.set(issuer.toHex(), signingKey)
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
 * The commits among `shas` that do not carry a GPG signature verifying against one of
 * `armoredKeys` (each parsed once per process). Keys are looked up by the signature's
 * issuer key id, so each commit costs one packet verification, run concurrently. Commit
 * objects come from `objects` when the caller has them (a push's walk), else, and for any
 * commit that fails on them, from one `git cat-file --batch`.
 */
export const unverifiedCommits = (input: {
  readonly gitDir: string
  readonly env: Readonly<Record<string, string>>
  readonly shas: ReadonlyArray<string>
  readonly armoredKeys: ReadonlyArray<string>
  readonly objects?: ReadonlyMap<string, Buffer> | undefined
}): Effect.Effect<ReadonlyArray<string>> =>
  Effect.gen(function*() {
    if (input.shas.length === 0) return []
    const keys = yield* Effect.promise(() =>
      Promise.all(input.armoredKeys.map((armored) => parsePublicKey(armored).catch(() => undefined)))
    )
    const keysById = new Map<string, openpgp.PublicKey>()
    for (const key of keys) {
      if (key !== undefined) { for (const id of keyIdsOf(key)) keysById.set(id.toHex(), key) }
    }
    if (keysById.size === 0) return input.shas
    const signingKeys = new Map<string, Promise<SigningKey | undefined>>()
    const check = (shas: ReadonlyArray<string>, objects: ReadonlyMap<string, Buffer>) =>
      Effect.promise(() =>
        Promise.all(shas.map(async (sha) => {
          const raw = objects.get(sha)
          const signed = raw === undefined ? undefined : splitSignature(raw)
          return signed !== undefined && await verifies(signed, keysById, signingKeys)
        }))
      ).pipe(Effect.map((verdicts) => shas.filter((_, index) => !verdicts[index])))
    const failing = input.objects === undefined ? input.shas : yield* check(input.shas, input.objects)
    if (failing.length === 0) return []
    const stored = yield* readCommits(input.gitDir, input.env, failing).pipe(
      Effect.orElseSucceed(() => new Map<string, Buffer>())
    )
    return yield* check(failing, stored)
  })
