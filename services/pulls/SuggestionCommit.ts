import { Context, Effect, Layer, Schema } from "effect"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"
import { Readable } from "node:stream"
import { gitText, runGit } from "../git/GitProcess.ts"
import { indexPack, makeQuarantine, type Quarantine, removeQuarantine } from "../git/Quarantine.ts"
import { type Pusher, RefUpdates } from "../git/RefUpdates.ts"
import { RepoCache, type SyncedRepo } from "../git/RepoCache.ts"
import type { RepoRecord } from "../git/Repositories.ts"

/**
 * Applying a suggestion (GUIDE §11) as one commit on a branch: a `Context.Service`
 * (`SuggestionCommits`, `static layer`, needs `RepoCache` and `RefUpdates`) with one method,
 * `applySuggestion`.
 *
 * Like GitHub, a suggestion is outdated only when the lines it replaces changed: it is
 * checked against the branch's tip (not `expectedHeadSha`), so an unrelated later commit
 * does not make it outdated. The commit is built in a quarantine over the runner's synced
 * copy (blob, tree through a temporary index, `commit-tree`), packed, and the branch moved
 * through `RefUpdates.apply` (compare-and-swap against the tip read, `push` event, branch
 * protection hook) with the committer as pusher. When another push wins the race, the
 * tip is read again and the suggestion re-checked against it: it lands on top of the new
 * tip or is refused as outdated, never losing either commit.
 */

export const SuggestionRefusedReason = Schema.Literals(["outdated", "noop", "missing", "rejected"])
export type SuggestionRefusedReason = typeof SuggestionRefusedReason.Type

/**
 * Why a suggestion was not applied: `outdated` (its lines changed or the file is gone),
 * `noop` (the replacement equals the lines), `missing` (the branch does not exist),
 * `rejected` (the ref update was refused, e.g. by branch protection; `message` says why).
 */
export class SuggestionRefused extends Schema.TaggedError<SuggestionRefused>()("SuggestionRefused", {
  reason: SuggestionRefusedReason,
  message: Schema.String
}) {}

export interface SuggestionInput {
  readonly repo: RepoRecord
  readonly branch: string
  /** The head the suggestion was made on (informational: lines are checked at the tip). */
  readonly expectedHeadSha: string
  readonly path: string
  /** 1-based, inclusive, on the new side of the diff. */
  readonly startLine: number
  readonly endLine: number
  /** The lines the suggestion replaces, as they were when it was made (without line endings). */
  readonly originalLines: ReadonlyArray<string>
  /** The new text of those lines; `""` deletes them. A final newline is ignored. */
  readonly replacement: string
  /** The suggester. */
  readonly author: { readonly name: string; readonly email: string }
  /** The applier; with `id` (the user's id) it is also the pusher of the `push` event. */
  readonly committer: { readonly name: string; readonly email: string; readonly id?: string | undefined }
  /** Writes that commit with the branch's move (the suggestion marked applied by its commit). */
  readonly alongside?: ((sha: string) => Effect.Effect<void>) | undefined
  readonly message: string
}

/** A file's lines as bytes, each with its own line ending (the last one may have none). */
export const splitLines = (content: Uint8Array): ReadonlyArray<Buffer> => {
  const bytes = Buffer.from(content)
  const lines: Array<Buffer> = []
  let start = 0
  for (let i = bytes.indexOf(10); i >= 0; i = bytes.indexOf(10, start)) {
    lines.push(bytes.subarray(start, i + 1))
    start = i + 1
  }
  if (start < bytes.length) lines.push(bytes.subarray(start))
  return lines
}

/** A line's text without its ending, as a diff shows it. */
const lineText = (line: Buffer) => line.toString("utf8").replace(/\r?\n$/, "")

/** The lines of a suggestion's replacement text (a final newline does not add an empty line). */
export const replacementLines = (replacement: string): ReadonlyArray<string> =>
  replacement === "" ? [] : replacement.replace(/\r?\n$/, "").split(/\r?\n/)

type Edit =
  | { readonly _tag: "Edited"; readonly content: Buffer }
  | { readonly _tag: "Refused"; readonly reason: SuggestionRefusedReason; readonly message: string }

/**
 * The file after the suggestion, or why it cannot be applied (pure). Lines outside the
 * range keep their bytes; the new lines take the line ending of the first replaced line,
 * and the file keeps its final-newline state.
 */
export const editLines = (
  content: Uint8Array | string,
  input: Pick<SuggestionInput, "startLine" | "endLine" | "originalLines" | "replacement" | "path">
): Edit => {
  const lines = splitLines(typeof content === "string" ? Buffer.from(content, "utf8") : content)
  const { endLine, startLine } = input
  const original = input.originalLines.map((line) => line.replace(/\r$/, ""))
  const current = lines.slice(startLine - 1, endLine).map(lineText)
  const inRange = Number.isInteger(startLine) && Number.isInteger(endLine) && startLine >= 1 &&
    endLine >= startLine && endLine <= lines.length
  if (!inRange || current.length !== original.length || current.some((line, i) => line !== original[i])) {
    return {
      _tag: "Refused",
      reason: "outdated",
      message: `Lines ${startLine}-${endLine} of '${input.path}' changed since the suggestion was made`
    }
  }
  const next = replacementLines(input.replacement)
  if (next.length === current.length && next.every((line, i) => line === current[i])) {
    return { _tag: "Refused", reason: "noop", message: "The suggestion changes nothing" }
  }
  const eol = lines[startLine - 1].toString("latin1").endsWith("\r\n") ? "\r\n" : "\n"
  const finalNewline = lines[lines.length - 1].at(-1) === 10
  let edited = Buffer.concat([
    ...lines.slice(0, startLine - 1),
    ...next.map((line) => Buffer.from(line + eol, "utf8")),
    ...lines.slice(endLine)
  ])
  if (!finalNewline) edited = Buffer.from(edited.toString("latin1").replace(/\r?\n$/, ""), "latin1")
  return { _tag: "Edited", content: edited }
}

const refused = (reason: SuggestionRefusedReason, message: string) => new SuggestionRefused({ reason, message })

/** Times the tip is read again after another push won the compare-and-swap. */
const MAX_ATTEMPTS = 5

type Attempt = { readonly _tag: "Applied"; readonly sha: string } | { readonly _tag: "Raced" }

export class SuggestionCommits extends Context.Service<SuggestionCommits, {
  applySuggestion(input: SuggestionInput): Effect.Effect<{ readonly sha: string }, SuggestionRefused>
}>()("canopy/pulls/SuggestionCommits") {
  static readonly layer = Layer.effect(
    SuggestionCommits,
    Effect.gen(function*() {
      const cache = yield* RepoCache
      const refUpdates = yield* RefUpdates

      /** git in the synced copy, seeing the quarantine's objects too; failures are defects. */
      const git = (dir: string, quarantine: Quarantine, args: ReadonlyArray<string>, extra?: {
        readonly env?: Record<string, string>
        readonly stdin?: string | Uint8Array
      }) =>
        runGit({ gitDir: dir, args, env: { ...quarantine.env, ...extra?.env }, stdin: extra?.stdin }).pipe(
          Effect.orDie
        )
      const text = (out: Buffer) => out.toString("utf8").trim()

      const attempt = (input: SuggestionInput, synced: SyncedRepo) =>
        Effect.gen(function*() {
          const refName = `refs/heads/${input.branch}`
          const tip = synced.refs.find((ref) => ref.name === refName)?.sha
          if (tip === undefined) return yield* refused("missing", `Branch '${input.branch}' does not exist`)
          const entry = yield* gitText({
            gitDir: synced.dir,
            args: ["ls-tree", "-z", tip, "--", input.path],
            env: { GIT_LITERAL_PATHSPECS: "1" }
          }).pipe(
            Effect.orDie
          )
          const match = /^(\d+) blob ([0-9a-f]{40})\t/.exec(entry)
          if (match === null || !entry.slice(match[0].length).startsWith(`${input.path}\0`)) {
            return yield* refused("outdated", `'${input.path}' no longer exists on '${input.branch}'`)
          }
          const [, mode, blobSha] = match
          if (mode === "120000") return yield* refused("outdated", `'${input.path}' is a symbolic link`)
          const content = yield* runGit({ gitDir: synced.dir, args: ["cat-file", "blob", blobSha] }).pipe(Effect.orDie)
          const edit = editLines(content, input)
          if (edit._tag === "Refused") return yield* refused(edit.reason, edit.message)

          return yield* Effect.acquireUseRelease(
            Effect.orDie(cache.tempDir()).pipe(
              Effect.map((dir) => makeQuarantine(synced.dir, dir)),
              Effect.tap((quarantine) =>
                Effect.promise(() => FsP.mkdir(quarantine.env.GIT_OBJECT_DIRECTORY, { recursive: true }))
              )
            ),
            (quarantine) =>
              Effect.gen(function*() {
                const dir = synced.dir
                const blob = text(
                  yield* git(dir, quarantine, ["hash-object", "-w", "--stdin"], { stdin: edit.content })
                )
                const index = { GIT_INDEX_FILE: Path.join(quarantine.dir, "index") }
                yield* git(dir, quarantine, ["read-tree", tip], { env: index })
                yield* git(dir, quarantine, ["update-index", "--cacheinfo", `${mode},${blob},${input.path}`], {
                  env: index
                })
                const tree = text(yield* git(dir, quarantine, ["write-tree"], { env: index }))
                const message = input.message.endsWith("\n") ? input.message : `${input.message}\n`
                const commit = text(
                  yield* git(dir, quarantine, ["commit-tree", tree, "-p", tip, "-F", "-"], {
                    stdin: message,
                    env: {
                      GIT_AUTHOR_NAME: input.author.name,
                      GIT_AUTHOR_EMAIL: input.author.email,
                      GIT_COMMITTER_NAME: input.committer.name,
                      GIT_COMMITTER_EMAIL: input.committer.email
                    }
                  })
                )
                // The new objects go to storage as one pack, like a push's.
                const objects = yield* git(dir, quarantine, ["rev-list", "--objects", commit, "--not", tip])
                const ids = objects.toString("utf8").split("\n").map((line) => line.split(" ")[0]).filter((id) =>
                  id !== ""
                )
                const pack = yield* git(dir, quarantine, ["pack-objects", "--stdout"], { stdin: `${ids.join("\n")}\n` })
                const packed = yield* indexPack(dir, quarantine, Readable.from([pack])).pipe(Effect.orDie)
                const pusher: Pusher = {
                  id: input.committer.id ?? "",
                  name: input.committer.name,
                  email: input.committer.email
                }
                const [result] = yield* refUpdates.apply({
                  repo: input.repo,
                  dir,
                  quarantine: packed,
                  commands: [{ name: refName, oldSha: tip, newSha: commit }],
                  atomic: true,
                  pusher,
                  serverCommit: true,
                  alongside: input.alongside?.(commit)
                }).pipe(Effect.orDie)
                if (result.ok) return { _tag: "Applied", sha: commit } as Attempt
                if (result.reason === "fetch first") return { _tag: "Raced" } as Attempt
                return yield* refused("rejected", `The update of '${input.branch}' was refused: ${result.reason}`)
              }),
            removeQuarantine
          )
        })

      const applySuggestion = Effect.fn("SuggestionCommits.applySuggestion")(function*(input: SuggestionInput) {
        for (let i = 0; i < MAX_ATTEMPTS; i++) {
          const outcome = yield* cache.use(input.repo, (synced) => attempt(input, synced)).pipe(
            Effect.catchTag("GitStorageError", Effect.die)
          )
          if (outcome._tag === "Applied") return { sha: outcome.sha }
        }
        return yield* refused("outdated", `'${input.branch}' kept moving; try again`)
      })

      return SuggestionCommits.of({ applySuggestion })
    })
  )
}
