import { Effect } from "effect"
import { runGit } from "../git/GitProcess.ts"
import { verifyInWorkers } from "./SignatureWorkers.ts"

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

/**
 * The commits among `shas` that do not carry a GPG signature verifying against one of
 * `armoredKeys` (`SignatureCheck.ts`: keys parsed once, one packet verification per
 * commit), verified on worker threads for larger batches (`SignatureWorkers.ts`). Commit
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
    if (input.armoredKeys.length === 0) return input.shas
    const check = (shas: ReadonlyArray<string>, objects: ReadonlyMap<string, Buffer>) => {
      const signed = shas.map((sha) => {
        const raw = objects.get(sha)
        const split = raw === undefined ? undefined : splitSignature(raw)
        const signature = split === undefined ? undefined : dearmor(split.signature)
        return split === undefined || signature === undefined ? undefined : { payload: split.payload, signature }
      })
      const present = signed.filter((item) => item !== undefined)
      return Effect.promise(() => verifyInWorkers(present, input.armoredKeys)).pipe(
        Effect.map((verdicts) => {
          let next = 0
          return shas.filter((_, index) => signed[index] === undefined || !verdicts[next++])
        })
      )
    }
    const failing = input.objects === undefined ? input.shas : yield* check(input.shas, input.objects)
    if (failing.length === 0) return []
    const stored = yield* readCommits(input.gitDir, input.env, failing).pipe(
      Effect.orElseSucceed(() => new Map<string, Buffer>())
    )
    return yield* check(failing, stored)
  })
