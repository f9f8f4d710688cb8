import { Clock, Config, Context, Duration, Effect, Layer, Option, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"
import { BlobStore } from "../storage/BlobStore.ts"
import { CACHE_EXCLUDES, type CachePlan } from "./CachePlan.ts"
import { cacheExists, deleteUnused, insertCache, touchCache, unusedSince } from "./CiCacheRows.ts"
import { Executor, ExecutorError, type Workspace } from "./Executor.ts"
import { isRoot } from "./Sandbox.ts"

/** Entries unused this long are deleted (the spec: "entries expire after 7 days of inactivity"). */
export const CACHE_EXPIRY_DAYS = 7
const DAY_MS = 24 * 60 * 60 * 1000
/** Inside the sandbox, where the archive is read from or written to. */
const SANDBOX_CACHE = "/canopy-cache"
/** A restore or a save that takes longer is abandoned (the run goes on without it). */
const CACHE_TIMEOUT = Duration.minutes(5)

/** The blob key prefix of a repository's caches: under its own prefix, so a purge removes them. */
export const cachePrefix = (repoId: string) => `repos/${repoId}/ci-cache/`

const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(1)} MiB`
const zstd = Fs.existsSync("/usr/bin/zstd")

/**
 * CI dependency caches (GUIDE §14 "Caches"): per repository and key (project type + lockfile
 * hash), one compressed tar archive in the BlobStore. `restore` unpacks it before `install`,
 * `save` packs the project's cache folders after a successful install when the key is new.
 * Both run `tar` inside the job's sandbox as the job's user, so an archive (made from what a
 * job left) can never write or read outside what that job itself could. Each returns one
 * line for the install job's log; a cache problem never fails a run.
 */
export class CiCaches extends Context.Service<CiCaches, {
  restore(repoId: string, workspace: Workspace, plan: CachePlan): Effect.Effect<string>
  save(repoId: string, workspace: Workspace, plan: CachePlan): Effect.Effect<string>
  /** Deletes entries unused for 7 days before `now` (the expiry cron); returns how many. */
  expire(now: number): Effect.Effect<number>
}>()("canopy/ci/CiCaches") {
  static readonly layer = Layer.effect(
    CiCaches,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const blobs = yield* BlobStore
      const executor = yield* Executor
      const maxBytes = (yield* Config.Int("CI_CACHE_MAX_MB").pipe(Config.withDefault(1024))) * 1024 ** 2

      /** A fresh transfer folder of the run, owned by the job's user, mounted at `/canopy-cache`. */
      const transferDir = (workspace: Workspace) =>
        Effect.promise(async () => {
          const dir = Path.join(workspace.dir, "cache")
          await FsP.rm(dir, { recursive: true, force: true })
          await FsP.mkdir(dir, { mode: 0o700 })
          if (isRoot()) await FsP.chown(dir, workspace.uid, workspace.uid)
          return dir
        })

      /** Runs `command` in the job's sandbox with the transfer folder; fails with its output. */
      const inSandbox = (workspace: Workspace, dir: string, command: string) => {
        const output: Array<Buffer> = []
        return executor.exec(workspace, {
          command,
          env: {},
          binds: [{ host: dir, sandbox: SANDBOX_CACHE }],
          onOutput: (chunk) => output.push(chunk)
        }).pipe(
          Effect.timeoutOption(CACHE_TIMEOUT),
          Effect.flatMap(Option.match({
            onNone: () => Effect.fail(new ExecutorError({ message: "timed out" })),
            onSome: (exit) => Effect.succeed({ exit, output: Buffer.concat(output).toString().trim().slice(-300) })
          }))
        )
      }

      const restore = Effect.fn("CiCaches.restore")(function*(repoId: string, workspace: Workspace, plan: CachePlan) {
        const now = new Date(yield* Clock.currentTimeMillis)
        const row = yield* touchCache(sql, repoId, plan.key, now).pipe(Effect.orDie)
        if (row === undefined) return `[canopy] cache miss: key ${plan.key} (${plan.lockfiles.join(", ")})\n`
        const dir = yield* transferDir(workspace)
        const name = Path.basename(row.blob_key)
        const file = Path.join(dir, name)
        const outcome = yield* Effect.gen(function*() {
          const handle = yield* Effect.promise(() => FsP.open(file, "w", 0o644))
          yield* Stream.runForEach(blobs.get(row.blob_key), (chunk) => Effect.promise(() => handle.write(chunk))).pipe(
            Effect.ensuring(Effect.promise(() => handle.close()))
          )
          const { exit, output } = yield* inSandbox(
            workspace,
            dir,
            `tar -x ${name.endsWith(".zst") ? "--zstd" : "-z"} -f ${SANDBOX_CACHE}/${name} -C /`
          )
          if (exit.exitCode !== 0) return `[canopy] cache not restored: tar failed: ${output}\n`
          return `[canopy] cache restored: key ${plan.key} (${mib(row.size)})\n`
        }).pipe(
          Effect.catch((error) => Effect.succeed(`[canopy] cache not restored: ${error._tag}\n`)),
          Effect.ensuring(Effect.promise(() => FsP.rm(dir, { recursive: true, force: true })))
        )
        return outcome
      })

      const save = Effect.fn("CiCaches.save")(function*(repoId: string, workspace: Workspace, plan: CachePlan) {
        if (yield* cacheExists(sql, repoId, plan.key).pipe(Effect.orDie)) return ""
        const dir = yield* transferDir(workspace)
        const name = `${randomBytes(8).toString("hex")}.tar.${zstd ? "zst" : "gz"}`
        const file = Path.join(dir, name)
        // Only the paths that exist (`tar` fails on a missing one); exit 3: nothing to cache.
        const command = [
          "set --",
          `for p in ${plan.paths.join(" ")}; do [ -e "/$p" ] && set -- "$@" "$p"; done`,
          "[ $# -gt 0 ] || exit 3",
          `exec tar -c ${zstd ? "--zstd" : "-z"} -f ${SANDBOX_CACHE}/${name} -C / ${
            CACHE_EXCLUDES.map((path) => `--exclude=${path}`).join(" ")
          } "$@"`
        ].join("\n")
        return yield* Effect.gen(function*() {
          const { exit, output } = yield* inSandbox(workspace, dir, command)
          if (exit.exitCode === 3) return `[canopy] cache not saved: none of ${plan.paths.join(", ")} exists\n`
          if (exit.exitCode !== 0) return `[canopy] cache not saved: tar failed: ${output}\n`
          const size = (yield* Effect.promise(() => FsP.stat(file))).size
          if (size > maxBytes) return `[canopy] cache not saved: ${mib(size)} is over the ${mib(maxBytes)} limit\n`
          const blobKey = `${cachePrefix(repoId)}${plan.key}/${name}`
          yield* blobs.put(
            blobKey,
            Stream.fromAsyncIterable(
              Fs.createReadStream(file) as AsyncIterable<Uint8Array>,
              (cause) => new ExecutorError({ message: `read the cache archive: ${String(cause)}` })
            )
          )
          const now = new Date(yield* Clock.currentTimeMillis)
          const inserted = yield* insertCache(sql, { repo_id: repoId, key: plan.key, blob_key: blobKey, size }, now)
            .pipe(Effect.orDie)
          // Another run saved this key meanwhile: keep its archive, drop ours.
          if (!inserted) {
            yield* blobs.delete(blobKey)
            return ""
          }
          return `[canopy] cache saved: key ${plan.key} (${mib(size)})\n`
        }).pipe(
          Effect.catch((error) => Effect.succeed(`[canopy] cache not saved: ${error.message}\n`)),
          Effect.ensuring(Effect.promise(() => FsP.rm(dir, { recursive: true, force: true })))
        )
      })

      const expire = Effect.fn("CiCaches.expire")(function*(now: number) {
        const before = new Date(now - CACHE_EXPIRY_DAYS * DAY_MS)
        let deleted = 0
        while (true) {
          const due = yield* unusedSince(sql, before, 100).pipe(Effect.orDie)
          if (due.length === 0) return deleted
          for (const row of due) {
            // The row first: a restore racing with it then finds no entry rather than a missing blob.
            if (yield* deleteUnused(sql, row, before).pipe(Effect.orDie)) {
              yield* blobs.delete(row.blob_key).pipe(Effect.orDie)
              deleted++
            }
          }
        }
      })

      return CiCaches.of({ restore, save, expire })
    })
  )
}
