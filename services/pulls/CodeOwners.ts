import { Context, Effect, Layer } from "effect"
import { NotFound } from "../../schemas/platform/Errors.ts"
import { gitText, runGit } from "../git/GitProcess.ts"
import { RepoCache, type SyncedRepo } from "../git/RepoCache.ts"
import type { RepoRecord } from "../git/Repositories.ts"
import {
  CODEOWNERS_PATHS,
  type CodeOwnersError,
  type CodeOwnersFile,
  ownersOf,
  parseCodeOwners
} from "./CodeOwnersFile.ts"

export interface PathOwners {
  /** Every owner of the paths, once each, in order of first appearance. */
  readonly owners: ReadonlyArray<string>
  /** The owners of each path asked about (empty: unowned). */
  readonly byPath: ReadonlyMap<string, ReadonlyArray<string>>
}

/** Parsed files kept per blob id (a file is parsed once, whatever branch or push names it). */
const PARSED_CACHE_SIZE = 200

const EMPTY: CodeOwnersFile = { rules: [], errors: [] }

/**
 * The CODEOWNERS file of a ref (GUIDE §11: `CODEOWNERS`, `.github/CODEOWNERS`,
 * `docs/CODEOWNERS`, first found), read from the runner's synced copy and parsed with
 * GitHub's semantics (`CodeOwnersFile.ts`). A branch without the file has no owners.
 */
export class CodeOwners extends Context.Service<CodeOwners, {
  /** The owners of `paths` on `branch` (none when the branch or the file does not exist). */
  forPaths(repo: RepoRecord, branch: string, paths: ReadonlyArray<string>): Effect.Effect<PathOwners>
  /** The lines of `ref`'s file that cannot be used; `ref` is a branch, a tag or a commit id. */
  errors(repo: RepoRecord, ref: string): Effect.Effect<ReadonlyArray<CodeOwnersError>, NotFound>
}>()("canopy/pulls/CodeOwners") {
  static readonly layer = Layer.effect(
    CodeOwners,
    Effect.gen(function*() {
      const cache = yield* RepoCache
      const parsed = new Map<string, CodeOwnersFile>()

      /** The commit `ref` names in the synced copy: a branch, then a tag, then a commit id. */
      const commitOf = (synced: SyncedRepo, ref: string) =>
        Effect.gen(function*() {
          const named = [`refs/heads/${ref}`, `refs/tags/${ref}`].find((name) =>
            synced.refs.some((stored) => stored.name === name)
          )
          if (named === undefined && !/^[0-9a-f]{7,40}$/.test(ref)) return undefined
          return yield* gitText({
            gitDir: synced.dir,
            args: ["rev-parse", "--verify", "-q", "--end-of-options", `${named ?? ref}^{commit}`]
          }).pipe(
            Effect.map((text): string | undefined => text.trim()),
            Effect.orElseSucceed(() => undefined)
          )
        })

      /** The parsed file at `commit`, or the empty file when none of the locations holds one. */
      const fileAt = (synced: SyncedRepo, commit: string) =>
        Effect.gen(function*() {
          // One listing of the three locations; the first in CODEOWNERS_PATHS order that is a file wins.
          const listing = yield* gitText({
            gitDir: synced.dir,
            args: ["ls-tree", "-z", commit, "--", ...CODEOWNERS_PATHS],
            env: { GIT_LITERAL_PATHSPECS: "1" }
          }).pipe(Effect.orDie)
          const blobs = new Map<string, string>()
          for (const entry of listing.split("\0")) {
            const match = /^\d+ blob ([0-9a-f]{40})\t(.*)$/s.exec(entry)
            if (match !== null) blobs.set(match[2], match[1])
          }
          const blob = CODEOWNERS_PATHS.map((path) => blobs.get(path)).find((sha) => sha !== undefined)
          if (blob === undefined) return EMPTY
          const known = parsed.get(blob)
          if (known !== undefined) return known
          const content = yield* runGit({ gitDir: synced.dir, args: ["cat-file", "blob", blob] }).pipe(Effect.orDie)
          const file = parseCodeOwners(content.toString("utf8"))
          if (parsed.size >= PARSED_CACHE_SIZE) parsed.delete(parsed.keys().next().value!)
          parsed.set(blob, file)
          return file
        })

      const withFile = <A, E>(
        repo: RepoRecord,
        ref: string,
        work: (file: CodeOwnersFile | undefined) => Effect.Effect<A, E>
      ) =>
        cache.use(
          repo,
          (synced) =>
            Effect.flatMap(commitOf(synced, ref), (commit) =>
              commit === undefined ? work(undefined) : Effect.flatMap(fileAt(synced, commit), work))
        ).pipe(
          Effect.catchTag("GitStorageError", Effect.die)
        )

      const forPaths = Effect.fn("CodeOwners.forPaths")(
        function*(repo: RepoRecord, branch: string, paths: ReadonlyArray<string>) {
          return yield* withFile(repo, branch, (file) =>
            Effect.sync(() => {
              const byPath = new Map<string, ReadonlyArray<string>>()
              const owners: Array<string> = []
              for (const path of paths) {
                const own = file === undefined ? [] : ownersOf(file, path)
                byPath.set(path, own)
                for (const owner of own) if (!owners.includes(owner)) owners.push(owner)
              }
              return { owners, byPath } satisfies PathOwners
            }))
        }
      )

      const errors = Effect.fn("CodeOwners.errors")(function*(repo: RepoRecord, ref: string) {
        return yield* withFile(repo, ref, (file) =>
          file === undefined
            ? Effect.fail(new NotFound({ message: `Ref '${ref}' not found` }))
            : Effect.succeed(file.errors))
      })

      return CodeOwners.of({ forPaths, errors })
    })
  )
}
