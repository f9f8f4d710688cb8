import * as NodeStream from "@effect/platform-node/NodeStream"
import { Effect, Exit, Layer, Option, Predicate, Schema, Stream } from "effect"
import * as NodeCrypto from "node:crypto"
import * as Fs from "node:fs"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"
import {
  type BlobBody,
  type BlobInfo,
  BlobNotFound,
  BlobStore,
  BlobStoreError,
  compareKeys,
  getBytesVia,
  messageOf,
  type PresignOptions,
  type PutOptions,
  type PutResult,
  RESERVED_PREFIX,
  validateKey,
  validatePrefix,
  validatePresign
} from "./BlobStore.ts"

/**
 * Stores blobs as files under `root`: key `a/b.png` is `<root>/a/b.png`.
 *
 * Writes go to a `.canopy-tmp-*` file in the target's folder, are fsynced and
 * then renamed over the target, so a crash leaves either the old or the new
 * blob, never half of one (stray temp files are skipped by `list`).
 *
 * The content type is kept in a JSON sidecar at `<root>/.canopy-meta/<key>`,
 * outside the blob tree, so every valid key stays usable as a file name.
 * Segments starting with `.canopy-` are reserved for this and rejected in keys.
 * The sidecar is written after the blob, so a crash in between can pair a new
 * blob with the previous content type; it is advisory metadata only.
 *
 * Differences from S3: a key cannot be both a blob and a "folder" (`a` and
 * `a/b`), and empty folders are left behind by `delete`.
 */
export const layerFolder = (root: string): Layer.Layer<BlobStore, BlobStoreError> =>
  Layer.effect(
    BlobStore,
    Effect.gen(function*() {
      const base = Path.resolve(root)
      yield* tryFs("create root", base, () => FsP.mkdir(base, { recursive: true }))

      // Keys are already validated; this re-check guards against a validation bug becoming a path traversal.
      const inside = (dir: string, key: string) =>
        Effect.suspend(() => {
          const full = Path.resolve(dir, ...key.split("/"))
          return full.startsWith(base + Path.sep)
            ? Effect.succeed(full)
            : Effect.fail(new BlobStoreError({ message: `Key ${JSON.stringify(key)} escapes the store root`, key }))
        })
      const blobPath = (key: string) => Effect.flatMap(validateKey(key), () => inside(base, key))
      const metaPath = (key: string) => inside(Path.join(base, META_DIR), key)

      const put = Effect.fn("BlobStore.put")(
        function*<E>(
          key: string,
          body: BlobBody<E>,
          options?: PutOptions
        ): Effect.fn.Return<PutResult, BlobStoreError | E> {
          const target = yield* blobPath(key)
          const size = yield* writeAtomically(key, target, body)
          const meta = yield* metaPath(key)
          if (options?.contentType === undefined) {
            yield* unlinkIfExists(key, meta)
          } else {
            const json = Schema.encodeSync(BlobMetaJson)({ contentType: options.contentType })
            yield* writeAtomically<never>(key, meta, new TextEncoder().encode(json))
          }
          return { key, size }
        }
      )

      const get = (key: string): Stream.Stream<Uint8Array, BlobStoreError | BlobNotFound> =>
        Stream.unwrap(
          Effect.map(blobPath(key), (path) =>
            NodeStream.fromReadable<Uint8Array, BlobStoreError | BlobNotFound>({
              evaluate: () => Fs.createReadStream(path),
              onError: (error) => isMissingFile(error) ? new BlobNotFound({ key }) : fsError("read", key, error)
            }))
        ).pipe(Stream.withSpan("BlobStore.get", { attributes: { key } }))

      const head = Effect.fn("BlobStore.head")(function*(key: string) {
        const path = yield* blobPath(key)
        const stat = yield* Effect.tryPromise({
          try: () => FsP.stat(path),
          catch: (error) => isMissingFile(error) ? new BlobNotFound({ key }) : fsError("stat", key, error)
        })
        if (!stat.isFile()) return yield* new BlobNotFound({ key })
        const meta = yield* metaPath(key)
        const json = yield* Effect.tryPromise({
          try: () =>
            FsP.readFile(meta, "utf8").catch((error) => isMissingFile(error) ? undefined : Promise.reject(error)),
          catch: (error) => fsError("read metadata of", key, error)
        })
        // An unreadable sidecar only loses the content type; the blob itself is fine.
        const contentType = json === undefined
          ? undefined
          : Option.getOrUndefined(decodeBlobMeta(json))?.contentType
        return { key, size: stat.size, contentType, lastModified: stat.mtime } satisfies BlobInfo
      })

      const del = Effect.fn("BlobStore.delete")(function*(key: string) {
        yield* unlinkIfExists(key, yield* blobPath(key))
        yield* unlinkIfExists(key, yield* metaPath(key))
      })

      const list = Effect.fn("BlobStore.list")(function*(prefix: string) {
        const dirKey = yield* validatePrefix(prefix)
        const start = dirKey === "" ? base : yield* inside(base, dirKey)
        const keys = yield* Effect.tryPromise({
          try: () => walk(start, dirKey, prefix),
          catch: (error) => fsError("list", prefix, error)
        })
        const entries = yield* Effect.forEach(keys, (key) =>
          Effect.tryPromise({
            try: () =>
              FsP.stat(Path.join(base, ...key.split("/"))).then(
                (stat) => stat.isFile() ? [{ key, size: stat.size }] : [],
                // Deleted between readdir and stat: it is simply not listed.
                (error) => isMissingFile(error) ? [] : Promise.reject(error)
              ),
            catch: (error) => fsError("stat", key, error)
          }), { concurrency: 16 })
        return entries.flat().sort(compareKeys)
      })

      const presignedUrl = Effect.fn("BlobStore.presignedUrl")(function*(key: string, options: PresignOptions) {
        yield* validateKey(key)
        yield* validatePresign(key, options)
        return Option.none<string>()
      })

      return BlobStore.of({
        put,
        get,
        getBytes: getBytesVia(get),
        head,
        delete: del,
        list,
        presignedUrl
      })
    })
  )

const META_DIR = `${RESERVED_PREFIX}meta`

const TMP_PREFIX = `${RESERVED_PREFIX}tmp-`

const BlobMetaJson = Schema.fromJsonString(Schema.Struct({ contentType: Schema.optional(Schema.String) }))

const decodeBlobMeta = Schema.decodeUnknownOption(BlobMetaJson)

const errorCode = (error: unknown) =>
  Predicate.hasProperty(error, "code") && typeof error.code === "string" ? error.code : undefined

/** ENOTDIR: a parent "folder" is a blob; EISDIR: the key is a folder. Neither is a blob. */
const isMissingFile = (error: unknown) => {
  const code = errorCode(error)
  return code === "ENOENT" || code === "ENOTDIR" || code === "EISDIR"
}

const fsError = (operation: string, key: string, error: unknown) =>
  new BlobStoreError({
    message: `Failed to ${operation} ${JSON.stringify(key)}: ${messageOf(error)}`,
    key,
    cause: error
  })

const tryFs = <A>(operation: string, key: string, run: () => Promise<A>) =>
  Effect.tryPromise({ try: run, catch: (error) => fsError(operation, key, error) })

const unlinkIfExists = (key: string, path: string) =>
  tryFs(
    "delete",
    key,
    () => FsP.unlink(path).catch((error) => isMissingFile(error) ? undefined : Promise.reject(error))
  )

/**
 * Writes `body` to a fresh temp file next to `target`, fsyncs it and renames it
 * over `target`; the temp file is removed on failure or interruption.
 */
const writeAtomically = Effect.fnUntraced(
  function*<E>(key: string, target: string, body: BlobBody<E>): Effect.fn.Return<number, BlobStoreError | E> {
    const dir = Path.dirname(target)
    yield* tryFs("create folder for", key, () => FsP.mkdir(dir, { recursive: true }))
    const temp = Path.join(dir, `${TMP_PREFIX}${NodeCrypto.randomUUID()}`)
    const write = Effect.acquireUseRelease(
      tryFs("create", key, () => FsP.open(temp, "wx")),
      Effect.fnUntraced(function*(handle) {
        let size = 0
        const writeChunk = (chunk: Uint8Array) => {
          size += chunk.length
          return tryFs("write", key, () => writeFully(handle, chunk))
        }
        if (body instanceof Uint8Array) {
          yield* writeChunk(body)
        } else {
          yield* Stream.runForEach(body, writeChunk)
        }
        yield* tryFs("sync", key, () => handle.sync())
        return size
      }),
      (handle) => Effect.promise(() => handle.close().catch(() => undefined))
    )
    const size = yield* write.pipe(
      Effect.tap(() => tryFs("rename", key, () => FsP.rename(temp, target))),
      Effect.onExit((exit) =>
        Exit.isSuccess(exit) ? Effect.void : Effect.promise(() => FsP.rm(temp, { force: true }).catch(() => undefined))
      )
    )
    // Persist the rename itself; best effort, as not every file system can fsync a directory.
    yield* Effect.promise(() => syncDirectory(dir))
    return size
  }
)

const writeFully = async (handle: FsP.FileHandle, chunk: Uint8Array) => {
  let offset = 0
  while (offset < chunk.length) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.length - offset)
    offset += bytesWritten
  }
}

const syncDirectory = async (dir: string) => {
  const handle = await FsP.open(dir, "r").catch(() => undefined)
  if (handle === undefined) return
  await handle.sync().catch(() => undefined)
  await handle.close().catch(() => undefined)
}

/**
 * Keys of the regular files under `dir` (whose key is `dirKey`) that start with
 * `prefix`, skipping reserved names, symlinks and folders that cannot match.
 */
const walk = async (dir: string, dirKey: string, prefix: string): Promise<Array<string>> => {
  const entries = await FsP.readdir(dir, { withFileTypes: true }).catch((error) =>
    isMissingFile(error) ? [] : Promise.reject(error)
  )
  const keys: Array<string> = []
  for (const entry of entries) {
    if (entry.name.startsWith(RESERVED_PREFIX)) continue
    const key = dirKey === "" ? entry.name : `${dirKey}/${entry.name}`
    if (entry.isDirectory()) {
      const folder = `${key}/`
      if (folder.startsWith(prefix) || prefix.startsWith(folder)) {
        keys.push(...await walk(Path.join(dir, entry.name), key, prefix))
      }
    } else if (entry.isFile() && key.startsWith(prefix)) {
      keys.push(key)
    }
  }
  return keys
}
