import * as NodeStream from "@effect/platform-node/NodeStream"
import { Config, Context, Data, Effect, Layer, type Scope, Semaphore, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import * as Fs from "node:fs"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"
import { AppConfig } from "../platform/AppConfig.ts"
import { BlobStore } from "../storage/BlobStore.ts"
import { runGit } from "./GitProcess.ts"
import { packFiles } from "./PackRows.ts"
import { type StoredRef, storedRefs } from "./RefRows.ts"

/** The local copy of a repository could not be brought up to date (storage or file system). */
export class GitStorageError extends Data.TaggedError("GitStorageError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/** Where a repository's immutable pack files live in the BlobStore. */
export const packKey = (repoId: string, name: string, ext: "pack" | "idx") => `repos/${repoId}/packs/${name}.${ext}`

/** The repository state a cache sync saw: its refs and HEAD's target. */
export interface SyncedRepo {
  readonly dir: string
  readonly refs: ReadonlyArray<StoredRef>
}

interface Entry {
  readonly lock: Semaphore.Semaphore
  leases: number
  lastUsed: number
  bytes: number
  /** What the last sync wrote to `packed-refs` and `HEAD`: unchanged refs are not written again. */
  written: { readonly packedRefs: string; readonly head: string } | undefined
}

const storage = (message: string) => (cause: unknown) => new GitStorageError({ message, cause })
const fsTry = <A>(message: string, run: () => Promise<A>) => Effect.tryPromise({ try: run, catch: storage(message) })

/** Settings the server writes into every cached repository (no user or system config is read). */
const CACHE_CONFIG: ReadonlyArray<readonly [string, string]> = [
  ["core.logAllRefUpdates", "false"],
  ["gc.auto", "0"],
  // Refs may move between the advertisement and the request of a stateless fetch.
  ["uploadpack.allowAnySHA1InWant", "true"],
  ["uploadpack.allowFilter", "true"],
  ["receive.autogc", "false"]
]

/**
 * The runner-local cache of repositories (GUIDE §8: "runners keep a bounded local cache
 * of packs; the BlobStore is the truth"). Each repository is a bare git directory under
 * `DATA_DIR/git-cache/<repoId>` whose `objects/pack` holds copies of the packs listed in
 * `repo_packs`, and whose refs are rewritten from `repo_refs` at every sync. The `git`
 * binary (upload-pack, index-pack, rev-list, cat-file) works over it.
 *
 * `use` syncs (downloads missing packs, drops packs no longer listed, writes refs and
 * HEAD) under a per-repository lock, then runs the caller's work with a lease that keeps
 * the folder from eviction. Refs are read before the pack list, and refs only ever name
 * objects of packs already recorded, so every object a synced ref names is present.
 *
 * Bounded: when the cached folders exceed `GIT_CACHE_MAX_BYTES` (default 2 GiB), the
 * least recently used idle repositories are removed (they are fetched again on demand).
 */
export class RepoCache extends Context.Service<RepoCache, {
  use<A, E, R>(
    repo: { readonly id: string; readonly defaultBranch: string },
    work: (synced: SyncedRepo) => Effect.Effect<A, E, R>
  ): Effect.Effect<A, E | GitStorageError, R>
  /** `use` for work that outlives one effect (a streamed response): the lease ends with the scope. */
  lease(
    repo: { readonly id: string; readonly defaultBranch: string }
  ): Effect.Effect<SyncedRepo, GitStorageError, Scope.Scope>
  /** Syncs and runs `work` while holding the repository's cache lock (compaction rewrites the packs). */
  exclusive<A, E, R>(
    repo: { readonly id: string; readonly defaultBranch: string },
    work: (synced: SyncedRepo) => Effect.Effect<A, E, R>
  ): Effect.Effect<A, E | GitStorageError, R>
  /** A fresh temporary folder on the cache's file system (so files can be renamed into it). */
  tempDir(): Effect.Effect<string, GitStorageError>
  /** Moves a stored pack (`.pack` + `.idx`) into the repository's cached folder. */
  adopt(repoId: string, packPath: string, idxPath: string, name: string): Effect.Effect<void, GitStorageError>
  /** Bytes currently held by the cache (tests, benchmarks). */
  readonly size: Effect.Effect<number>
  readonly root: string
}>()("canopy/git/RepoCache") {
  static readonly layer = Layer.effect(
    RepoCache,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const sql = yield* SqlClient.SqlClient
      const blobs = yield* BlobStore
      const maxBytes = yield* Config.Number("GIT_CACHE_MAX_BYTES").pipe(Config.withDefault(2 * 1024 ** 3))
      const root = Path.resolve(config.dataDir, "git-cache")
      const tmpRoot = Path.join(root, ".tmp")
      yield* fsTry("create the git cache", () => FsP.mkdir(tmpRoot, { recursive: true }))
      const entries = new Map<string, Entry>()
      const entryOf = (repoId: string) => {
        let entry = entries.get(repoId)
        if (entry === undefined) {
          entry = { lock: Semaphore.makeUnsafe(1), leases: 0, lastUsed: Date.now(), bytes: 0, written: undefined }
          entries.set(repoId, entry)
        }
        return entry
      }
      const dirOf = (repoId: string) => Path.join(root, repoId)

      /** Creates the bare repository unless it exists; whether it did. */
      const initialise = Effect.fn("RepoCache.initialise")(function*(dir: string) {
        if (Fs.existsSync(Path.join(dir, "HEAD"))) return false
        yield* fsTry("create a cached repository", () => FsP.mkdir(dir, { recursive: true }))
        yield* runGit({ gitDir: dir, args: ["init", "--bare", "-q"] }).pipe(Effect.mapError(storage("git init failed")))
        for (const [key, value] of CACHE_CONFIG) {
          yield* runGit({ gitDir: dir, args: ["config", key, value] }).pipe(
            Effect.mapError(storage("git config failed"))
          )
        }
        return true
      })

      const download = Effect.fn("RepoCache.download")(function*(key: string, target: string) {
        const temp = Path.join(Path.dirname(target), `.tmp-${randomUUID()}`)
        const handle = yield* fsTry("open a pack file", () => FsP.open(temp, "w"))
        yield* Stream.runForEach(blobs.get(key), (chunk) => fsTry("write a pack file", () => handle.write(chunk))).pipe(
          Effect.ensuring(Effect.promise(() => handle.close())),
          Effect.mapError(storage(`download of ${key} failed`)),
          Effect.onError(() => Effect.promise(() => FsP.rm(temp, { force: true })))
        )
        yield* fsTry("rename a pack file", () => FsP.rename(temp, target))
      })

      /** Brings the folder to the stored state; returns the refs it wrote. */
      const sync = Effect.fn("RepoCache.sync")(
        function*(repo: { readonly id: string; readonly defaultBranch: string }) {
          const dir = dirOf(repo.id)
          // A folder created afresh (first use, or removed behind the cache's back) has git's own HEAD.
          if (yield* initialise(dir)) entryOf(repo.id).written = undefined
          // Refs first, then packs: every object a ref read here names is in a pack read after.
          const refs = yield* storedRefs(sql, repo.id).pipe(Effect.mapError(storage("reading refs failed")))
          const packs = yield* packFiles(sql, repo.id).pipe(Effect.mapError(storage("reading packs failed")))
          const packDir = Path.join(dir, "objects", "pack")
          const present = new Set(yield* fsTry("list packs", () => FsP.readdir(packDir)))
          const wanted = new Set(packs.map((pack) => pack.name))
          for (const pack of packs) {
            // The index goes in last: git only sees a pack once its .idx exists.
            if (!present.has(`${pack.name}.pack`)) {
              yield* download(packKey(repo.id, pack.name, "pack"), Path.join(packDir, `${pack.name}.pack`))
            }
            if (!present.has(`${pack.name}.idx`)) {
              yield* download(packKey(repo.id, pack.name, "idx"), Path.join(packDir, `${pack.name}.idx`))
            }
          }
          for (const file of present) {
            const match = /^(pack-[0-9a-f]{40})\.(pack|idx|rev|bitmap|keep)$/.exec(file)
            // Compacted away on some runner: the pack rows no longer list it.
            if (match !== null && !wanted.has(match[1])) {
              yield* fsTry("remove a pack", () => FsP.rm(Path.join(packDir, file), { force: true }))
            }
          }
          // git wants packed-refs in byte order; each name is encoded once, not once per comparison.
          const sorted = refs.map((ref) => ({ ref, key: Buffer.from(ref.name) }))
            .sort((a, b) => Buffer.compare(a.key, b.key))
            .map(({ ref }) => ref)
          const packedRefs = sorted.map((ref) => `${ref.sha} ${ref.name}\n`).join("")
          const head = `ref: refs/heads/${repo.defaultBranch}\n`
          const entry = entryOf(repo.id)
          // Every fetch syncs: with thousands of refs, rewriting an unchanged packed-refs costs more than the rest.
          if (entry.written?.packedRefs !== packedRefs || !Fs.existsSync(Path.join(dir, "packed-refs"))) {
            yield* writeAtomically(dir, "packed-refs", packedRefs)
          }
          if (entry.written?.head !== head) yield* writeAtomically(dir, "HEAD", head)
          entry.written = { packedRefs, head }
          entry.bytes = packs.reduce((sum, pack) => sum + pack.pack_bytes + pack.idx_bytes, 0)
          return { dir, refs: sorted }
        }
      )

      const writeAtomically = (dir: string, name: string, content: string) => {
        const temp = Path.join(dir, `.${name}.${randomUUID()}`)
        return fsTry(`write ${name}`, async () => {
          await FsP.writeFile(temp, content)
          await FsP.rename(temp, Path.join(dir, name))
        })
      }

      /** Removes least recently used idle repositories until the cache fits its bound. */
      const evict = Effect.fn("RepoCache.evict")(function*(keep: string) {
        let total = 0
        for (const entry of entries.values()) total += entry.bytes
        if (total <= maxBytes) return
        const idle = [...entries].filter(([id, entry]) => id !== keep && entry.leases === 0)
          .sort((a, b) => a[1].lastUsed - b[1].lastUsed)
        for (const [id, entry] of idle) {
          if (total <= maxBytes) break
          yield* entry.lock.withPermit(Effect.gen(function*() {
            if (entry.leases > 0) return
            yield* fsTry("evict a cached repository", () => FsP.rm(dirOf(id), { recursive: true, force: true }))
            total -= entry.bytes
            entry.bytes = 0
            entries.delete(id)
          })).pipe(Effect.ignore)
        }
      })

      const lease = (repo: { readonly id: string; readonly defaultBranch: string }) => {
        const entry = entryOf(repo.id)
        return Effect.acquireRelease(
          Effect.sync(() => {
            entry.leases++
            entry.lastUsed = Date.now()
          }),
          () => Effect.sync(() => void entry.leases--)
        ).pipe(
          // A pack deleted by a compaction between reading the list and downloading it: read again.
          Effect.andThen(entry.lock.withPermit(sync(repo)).pipe(Effect.retry({ times: 2 }))),
          Effect.tap(() => evict(repo.id))
        )
      }

      const use = <A, E, R>(
        repo: { readonly id: string; readonly defaultBranch: string },
        work: (synced: SyncedRepo) => Effect.Effect<A, E, R>
      ): Effect.Effect<A, E | GitStorageError, R> => Effect.scoped(Effect.flatMap(lease(repo), work))

      const exclusive = <A, E, R>(
        repo: { readonly id: string; readonly defaultBranch: string },
        work: (synced: SyncedRepo) => Effect.Effect<A, E, R>
      ) => {
        const entry = entryOf(repo.id)
        return Effect.acquireUseRelease(
          Effect.sync(() => void entry.leases++),
          () => entry.lock.withPermit(Effect.flatMap(sync(repo), work)),
          () => Effect.sync(() => void entry.leases--)
        )
      }

      const tempDir = () =>
        fsTry("create a temporary folder", async () => {
          const dir = Path.join(tmpRoot, randomUUID())
          await FsP.mkdir(dir, { recursive: true })
          return dir
        })

      const adopt = Effect.fn("RepoCache.adopt")(
        function*(repoId: string, packPath: string, idxPath: string, name: string) {
          const packDir = Path.join(dirOf(repoId), "objects", "pack")
          if (!Fs.existsSync(packDir)) return
          yield* fsTry("adopt a pack", async () => {
            await FsP.rename(packPath, Path.join(packDir, `${name}.pack`))
            await FsP.rename(idxPath, Path.join(packDir, `${name}.idx`))
          })
        }
      )

      const size = Effect.sync(() => [...entries.values()].reduce((sum, entry) => sum + entry.bytes, 0))

      return RepoCache.of({ use, lease, exclusive, tempDir, adopt, size, root })
    })
  )
}

/** A file as a byte stream (uploads to the BlobStore). */
export const fileStream = (path: string) =>
  NodeStream.fromReadable<Uint8Array, GitStorageError>({
    evaluate: () => Fs.createReadStream(path),
    onError: storage(`reading ${path} failed`)
  })
