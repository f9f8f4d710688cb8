import { Context, Effect, Layer, Option } from "effect"
import type { Blob, CommitList, Tree } from "../../schemas/git/Repositories.ts"
import { NotFound, ValidationError } from "../../schemas/platform/Errors.ts"
import { gitText, runGit } from "./GitProcess.ts"
import type { StoredRef } from "./RefRows.ts"
import { GitStorageError, RepoCache } from "./RepoCache.ts"
import { Repositories } from "./Repositories.ts"

/** Where a `{ref}/{path}` tail points: the ref as named, its commit, and the path below it. */
interface Resolved {
  readonly ref: string
  readonly commitSha: string
  readonly path: string
}

const cleanPath = (path: string) => path.split("/").filter((part) => part !== "" && part !== ".").join("/")

const RECORD = "\x1e"
const FIELD = "\x1f"

/** The commit list's query: a ref, or the cursor of a previous page, and a page size. */
export interface CommitsPage {
  readonly ref?: string | undefined
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
}

/** An opaque cursor: the walk's first commit and how many commits the pages before it listed. */
const encodeCursor = (at: { readonly sha: string; readonly skip: number }) =>
  Buffer.from(`${at.sha}:${at.skip}`, "utf8").toString("base64url")

/** The cursor's walk, or null for a string no page handed out. */
const decodeCursor = (cursor: string) => {
  const match = /^([0-9a-f]{40}):(\d{1,9})$/.exec(Buffer.from(cursor, "base64url").toString("utf8"))
  return match === null ? null : { sha: match[1], skip: Number(match[2]) }
}

/**
 * Reads trees, files and history of a repository for the API (pull requests and CI need
 * them), with the `git` binary over the runner's synced copy.
 *
 * A `{ref}/{path}` tail is split the way GitHub does: the longest leading part that names
 * a branch or tag is the ref (branch names may contain `/`); else the first segment must
 * be a commit id (abbreviated or full). Storage failures are defects (500).
 */
export class RepoReader extends Context.Service<RepoReader, {
  tree(orgId: string, repo: string, tail: string): Effect.Effect<Tree, NotFound>
  blob(orgId: string, repo: string, tail: string): Effect.Effect<Blob, NotFound>
  commits(
    orgId: string,
    repo: string,
    options: CommitsPage
  ): Effect.Effect<CommitList, NotFound | ValidationError>
}>()("canopy/git/RepoReader") {
  static readonly layer = Layer.effect(
    RepoReader,
    Effect.gen(function*() {
      const repos = yield* Repositories
      const cache = yield* RepoCache
      const notFound = (what: string) => new NotFound({ message: `${what} not found` })

      /** Runs `work` over the synced copy of an organization's repository. */
      const withRepo = <A, E>(
        orgId: string,
        slug: string,
        work: (dir: string, refs: ReadonlyArray<StoredRef>, defaultBranch: string) => Effect.Effect<A, E>
      ) =>
        Effect.flatMap(
          repos.record(orgId, slug),
          (repo) => cache.use(repo, (synced) => work(synced.dir, synced.refs, repo.defaultBranch))
        ).pipe(Effect.catchTag("GitStorageError", Effect.die))

      const commitOf = (dir: string, rev: string) =>
        gitText({ gitDir: dir, args: ["rev-parse", "--verify", "-q", "--end-of-options", `${rev}^{commit}`] }).pipe(
          Effect.map((text) => Option.some(text.trim())),
          Effect.orElseSucceed(() => Option.none<string>())
        )

      const resolve = Effect.fnUntraced(function*(dir: string, refs: ReadonlyArray<StoredRef>, tail: string) {
        const parts = tail.split("/").filter((part) => part !== "")
        const names = new Set(refs.map((ref) => ref.name))
        for (let i = parts.length; i >= 1; i--) {
          const candidate = parts.slice(0, i).join("/")
          for (const full of [`refs/heads/${candidate}`, `refs/tags/${candidate}`]) {
            if (!names.has(full)) continue
            const commit = yield* commitOf(dir, full)
            if (Option.isSome(commit)) {
              return { ref: candidate, commitSha: commit.value, path: cleanPath(parts.slice(i).join("/")) } as Resolved
            }
          }
        }
        if (parts.length > 0 && /^[0-9a-f]{7,40}$/.test(parts[0])) {
          const commit = yield* commitOf(dir, parts[0])
          if (Option.isSome(commit)) {
            return { ref: parts[0], commitSha: commit.value, path: cleanPath(parts.slice(1).join("/")) }
          }
        }
        return yield* notFound(`Ref in '${tail}'`)
      })

      const objectType = (dir: string, spec: string) =>
        gitText({ gitDir: dir, args: ["cat-file", "-t", spec] }).pipe(
          Effect.map((text) => text.trim()),
          Effect.orElseSucceed(() => "missing")
        )

      const tree = Effect.fn("RepoReader.tree")(function*(orgId: string, slug: string, tail: string) {
        return yield* withRepo(orgId, slug, (dir, refs) =>
          Effect.gen(function*() {
            const at = yield* resolve(dir, refs, tail)
            const spec = `${at.commitSha}:${at.path}`
            if ((yield* objectType(dir, spec)) !== "tree") return yield* notFound(`Directory '${at.path}'`)
            const out = yield* gitText({ gitDir: dir, args: ["ls-tree", "-z", "-l", spec] }).pipe(
              Effect.mapError((cause) => new GitStorageError({ message: "ls-tree failed", cause }))
            )
            const entries = out.split("\0").filter((line) => line !== "").map((line) => {
              const tab = line.indexOf("\t")
              const [mode, type, sha, size] = line.slice(0, tab).split(/\s+/)
              const name = line.slice(tab + 1)
              return {
                name,
                path: at.path === "" ? name : `${at.path}/${name}`,
                type: type as "blob" | "tree" | "commit",
                mode,
                sha,
                size: type === "blob" ? Number(size) : null
              }
            })
            return { ref: at.ref, commitSha: at.commitSha, path: at.path, entries }
          }))
      })

      const blob = Effect.fn("RepoReader.blob")(function*(orgId: string, slug: string, tail: string) {
        return yield* withRepo(orgId, slug, (dir, refs) =>
          Effect.gen(function*() {
            const at = yield* resolve(dir, refs, tail)
            const spec = `${at.commitSha}:${at.path}`
            if (at.path === "" || (yield* objectType(dir, spec)) !== "blob") return yield* notFound(`File '${at.path}'`)
            const sha = (yield* gitText({ gitDir: dir, args: ["rev-parse", spec] }).pipe(Effect.orDie)).trim()
            const content = yield* runGit({ gitDir: dir, args: ["cat-file", "blob", sha] }).pipe(Effect.orDie)
            const text = content.subarray(0, 8000).includes(0) ? undefined : new TextDecoder("utf-8", { fatal: true })
            let decoded: string | undefined
            try {
              decoded = text?.decode(content)
            } catch {
              decoded = undefined
            }
            return {
              ref: at.ref,
              commitSha: at.commitSha,
              path: at.path,
              sha,
              size: content.length,
              encoding: decoded === undefined ? "base64" as const : "utf-8" as const,
              content: decoded ?? content.toString("base64")
            }
          }))
      })

      const commits = Effect.fn("RepoReader.commits")(
        function*(
          orgId: string,
          slug: string,
          options: CommitsPage
        ) {
          const cursor = options.cursor === undefined ? undefined : decodeCursor(options.cursor)
          if (cursor === null) {
            return yield* new ValidationError({
              message: "Invalid query.cursor: pass the nextCursor of a previous page",
              details: [{ path: "query.cursor", message: "not a cursor of this list" }]
            })
          }
          return yield* withRepo(orgId, slug, (dir, refs, defaultBranch) =>
            Effect.gen(function*() {
              // A cursor pins the walk to its first page's commit: pushes meanwhile shift nothing.
              const at = yield* resolve(dir, refs, cursor?.sha ?? options.ref ?? defaultBranch)
              const skip = cursor?.skip ?? 0
              const format = ["%H", "%an", "%ae", "%aI", "%cn", "%ce", "%cI", "%P", "%B"].join(FIELD) + RECORD
              const [log, total] = yield* Effect.all([
                gitText({
                  gitDir: dir,
                  args: [
                    "log",
                    `--format=${format}`,
                    `--skip=${skip}`,
                    `--max-count=${options.limit ?? 30}`,
                    at.commitSha
                  ]
                }),
                gitText({ gitDir: dir, args: ["rev-list", "--count", at.commitSha] })
              ]).pipe(Effect.mapError((cause) => new GitStorageError({ message: "git log failed", cause })))
              const list = log.split(RECORD).map((record) => record.replace(/^\n/, "")).filter((r) => r !== "").map(
                (record) => {
                  const [sha, an, ae, ad, cn, ce, cd, parents, message] = record.split(FIELD)
                  return {
                    sha,
                    message: message.trimEnd(),
                    author: { name: an, email: ae, date: new Date(ad).toISOString() },
                    committer: { name: cn, email: ce, date: new Date(cd).toISOString() },
                    parents: parents === "" ? [] : parents.split(" ")
                  }
                }
              )
              const count = Number(total.trim())
              const next = skip + list.length
              return {
                commits: list,
                count,
                nextCursor: list.length > 0 && next < count ? encodeCursor({ sha: at.commitSha, skip: next }) : null
              }
            }))
        }
      )

      return RepoReader.of({ tree, blob, commits })
    })
  )
}
