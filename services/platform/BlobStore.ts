import {
  AbortMultipartUploadCommand,
  type CompletedPart,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand
} from "@aws-sdk/client-s3"
import { getSignedUrl } from "@aws-sdk/s3-request-presigner"
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Context, Effect, Exit, Layer, Option, Predicate, Redacted, Schema, Stream } from "effect"
import * as NodeCrypto from "node:crypto"
import * as Fs from "node:fs"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"
import type { Readable } from "node:stream"

/** A blob body: bytes already in memory, or a stream that is written as it is pulled. */
export type BlobBody<E = never> = Uint8Array | Stream.Stream<Uint8Array, E>

export interface PutOptions {
  readonly contentType?: string | undefined
}

export interface PutResult {
  readonly key: string
  readonly size: number
  readonly etag?: string | undefined
}

export interface BlobInfo {
  readonly key: string
  readonly size: number
  readonly contentType?: string | undefined
  readonly lastModified: Date
}

export interface BlobEntry {
  readonly key: string
  readonly size: number
}

export interface PresignOptions {
  readonly method: "GET" | "PUT"
  readonly expiresInSeconds: number
}

export interface S3Config {
  /** Custom endpoint for S3-compatible servers (MinIO, R2, ...); omit for AWS. */
  readonly endpoint?: string | undefined
  readonly bucket: string
  readonly region: string
  /** Both or neither; without them the SDK's default credential chain is used. */
  readonly accessKeyId?: string | undefined
  readonly secretAccessKey?: string | Redacted.Redacted<string> | undefined
  readonly forcePathStyle?: boolean | undefined
  /** Multipart part size for streamed puts; at least 5 MiB (the S3 minimum), default 8 MiB. */
  readonly partSizeBytes?: number | undefined
  /** `MaxKeys` per ListObjectsV2 page (1..1000, default 1000); small values exercise pagination in tests. */
  readonly listPageSize?: number | undefined
}

/** Storage failed, or the key/prefix/options were invalid. */
export class BlobStoreError extends Schema.TaggedError<BlobStoreError>()("BlobStoreError", {
  message: Schema.String,
  key: Schema.optional(Schema.String),
  cause: Schema.optional(Schema.Defect())
}) {}

/** `get`, `getBytes` or `head` of a key that holds no blob. */
export class BlobNotFound extends Schema.TaggedError<BlobNotFound>()("BlobNotFound", {
  key: Schema.String
}) {}

/**
 * Object storage. Keys are `/`-separated relative paths and are validated the
 * same way by every implementation (see `keyProblem`), so data can move between
 * the folder store and S3 unchanged.
 */
export class BlobStore extends Context.Service<BlobStore, {
  /** Writes (or replaces) a blob. A stream body is written as it is pulled; its errors pass through as `E`. */
  put<E = never>(
    key: string,
    body: BlobBody<E>,
    options?: PutOptions
  ): Effect.Effect<PutResult, BlobStoreError | E>
  /**
   * The blob's bytes. Lazy: nothing is opened until the stream runs, and the
   * file/connection is closed when it ends or is interrupted. A missing key fails
   * the stream with `BlobNotFound` before the first chunk, so call `head` first
   * if you need to decide on a response status before streaming.
   */
  get(key: string): Stream.Stream<Uint8Array, BlobStoreError | BlobNotFound>
  getBytes(key: string): Effect.Effect<Uint8Array, BlobStoreError | BlobNotFound>
  head(key: string): Effect.Effect<BlobInfo, BlobStoreError | BlobNotFound>
  /** Idempotent: deleting a missing key succeeds. */
  delete(key: string): Effect.Effect<void, BlobStoreError>
  /** Every blob whose key starts with `prefix` (plain string prefix, `""` for all), sorted by key. */
  list(prefix: string): Effect.Effect<ReadonlyArray<BlobEntry>, BlobStoreError>
  /** A URL a client can use directly; `None` when the store cannot hand out URLs (the folder store). */
  presignedUrl(key: string, options: PresignOptions): Effect.Effect<Option.Option<string>, BlobStoreError>
}>()("canopy/platform/BlobStore") {
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
  static layerFolder(root: string): Layer.Layer<BlobStore, BlobStoreError> {
    return Layer.effect(
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
  }

  /**
   * Stores blobs in an S3 bucket (or any S3-compatible server). The client is
   * created with the layer and destroyed when its scope closes.
   *
   * Byte bodies use one PutObject. Stream bodies are cut into fixed-size parts
   * (`partSizeBytes`) and sent as a multipart upload one part at a time, so at
   * most one part is held in memory; a stream that ends within the first part
   * is sent as a plain PutObject. A failed or interrupted multipart upload is
   * aborted so the bucket is not charged for orphaned parts.
   *
   * Checksums are only computed/validated when an operation requires them: the
   * SDK's newer default (CRC32 on every request) is rejected by many
   * S3-compatible servers and also bakes a checksum of an empty body into
   * presigned PUT URLs.
   */
  static layerS3(config: S3Config): Layer.Layer<BlobStore, BlobStoreError> {
    return Layer.effect(
      BlobStore,
      Effect.gen(function*() {
        const bucket = config.bucket
        const partSize = config.partSizeBytes ?? 8 * MiB
        const pageSize = config.listPageSize ?? 1000
        if (!Number.isInteger(partSize) || partSize < 5 * MiB) {
          return yield* new BlobStoreError({ message: "partSizeBytes must be an integer of at least 5 MiB" })
        }
        if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000) {
          return yield* new BlobStoreError({ message: "listPageSize must be an integer between 1 and 1000" })
        }
        if ((config.accessKeyId === undefined) !== (config.secretAccessKey === undefined)) {
          return yield* new BlobStoreError({ message: "accessKeyId and secretAccessKey must be given together" })
        }

        const client = yield* Effect.acquireRelease(
          Effect.try({
            try: () =>
              new S3Client({
                region: config.region,
                endpoint: config.endpoint,
                forcePathStyle: config.forcePathStyle,
                credentials: config.accessKeyId !== undefined && config.secretAccessKey !== undefined
                  ? {
                    accessKeyId: config.accessKeyId,
                    secretAccessKey: Redacted.isRedacted(config.secretAccessKey)
                      ? Redacted.value(config.secretAccessKey)
                      : config.secretAccessKey
                  }
                  : undefined,
                requestChecksumCalculation: "WHEN_REQUIRED",
                responseChecksumValidation: "WHEN_REQUIRED"
              }),
            catch: (error) =>
              new BlobStoreError({ message: `Invalid S3 configuration: ${messageOf(error)}`, cause: error })
          }),
          (client) => Effect.sync(() => client.destroy())
        )

        // Sends one command; a 404 (other than a missing bucket) becomes `BlobNotFound`.
        const send = <A>(
          operation: string,
          key: string,
          run: (signal: AbortSignal) => Promise<A>
        ): Effect.Effect<A, BlobStoreError | BlobNotFound> =>
          Effect.tryPromise({
            try: run,
            catch: (error) =>
              error instanceof S3ServiceException && error.$metadata.httpStatusCode === 404 &&
                error.name !== "NoSuchBucket"
                ? new BlobNotFound({ key })
                : new BlobStoreError({
                  message: `S3 ${operation} ${JSON.stringify(key)} failed: ${messageOf(error)}`,
                  key,
                  cause: error
                })
          })
        // For operations where a 404 cannot mean "no such blob".
        const sendOrFail = <A>(operation: string, key: string, run: (signal: AbortSignal) => Promise<A>) =>
          send(operation, key, run).pipe(
            Effect.catchTag(
              "BlobNotFound",
              (error) =>
                Effect.fail(
                  new BlobStoreError({
                    message: `S3 ${operation} ${JSON.stringify(key)}: not found`,
                    key,
                    cause: error
                  })
                )
            )
          )

        const putObject = (key: string, bytes: Uint8Array, contentType: string | undefined) =>
          sendOrFail("PutObject", key, (abortSignal) =>
            client.send(
              new PutObjectCommand({
                Bucket: bucket,
                Key: key,
                Body: bytes,
                ContentLength: bytes.length,
                ContentType: contentType
              }),
              { abortSignal }
            )).pipe(Effect.map((out) => ({ key, size: bytes.length, etag: out.ETag })))

        const putStream = Effect.fnUntraced(
          function*<E>(
            key: string,
            body: Stream.Stream<Uint8Array, E>,
            contentType: string | undefined
          ): Effect.fn.Return<PutResult, BlobStoreError | E> {
            const pending = new PartBuffer()
            const parts: Array<CompletedPart> = []
            let uploadId: string | undefined
            let size = 0

            const uploadPart = Effect.fnUntraced(function*(bytes: Uint8Array) {
              if (uploadId === undefined) {
                const created = yield* sendOrFail("CreateMultipartUpload", key, (abortSignal) =>
                  client.send(
                    new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ContentType: contentType }),
                    { abortSignal }
                  ))
                if (created.UploadId === undefined) {
                  return yield* new BlobStoreError({ message: "S3 CreateMultipartUpload returned no UploadId", key })
                }
                uploadId = created.UploadId
              }
              const partNumber = parts.length + 1
              const out = yield* sendOrFail("UploadPart", key, (abortSignal) =>
                client.send(
                  new UploadPartCommand({
                    Bucket: bucket,
                    Key: key,
                    UploadId: uploadId,
                    PartNumber: partNumber,
                    Body: bytes,
                    ContentLength: bytes.length
                  }),
                  { abortSignal }
                ))
              parts.push({ PartNumber: partNumber, ETag: out.ETag })
            })

            return yield* Effect.gen(function*() {
              yield* Stream.runForEach(body, (chunk) => {
                size += chunk.length
                pending.push(chunk)
                // Parts are all exactly `partSize` (some S3-compatible stores require equal parts).
                return Effect.whileLoop({
                  while: () => pending.size >= partSize,
                  body: () => uploadPart(pending.take(partSize)),
                  step: () => {}
                })
              })
              if (uploadId === undefined) {
                return yield* putObject(key, pending.take(pending.size), contentType)
              }
              if (pending.size > 0) yield* uploadPart(pending.take(pending.size))
              const done = yield* sendOrFail("CompleteMultipartUpload", key, (abortSignal) =>
                client.send(
                  new CompleteMultipartUploadCommand({
                    Bucket: bucket,
                    Key: key,
                    UploadId: uploadId,
                    MultipartUpload: { Parts: parts }
                  }),
                  { abortSignal }
                ))
              return { key, size, etag: done.ETag }
            }).pipe(
              Effect.onExit((exit) => {
                const id = uploadId
                return Exit.isSuccess(exit) || id === undefined
                  ? Effect.void
                  : sendOrFail(
                    "AbortMultipartUpload",
                    key,
                    () => client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: id }))
                  ).pipe(
                    Effect.ignore
                  )
              })
            )
          }
        )

        const put = Effect.fn("BlobStore.put")(
          function*<E>(
            key: string,
            body: BlobBody<E>,
            options?: PutOptions
          ): Effect.fn.Return<PutResult, BlobStoreError | E> {
            yield* validateKey(key)
            return body instanceof Uint8Array
              ? yield* putObject(key, body, options?.contentType)
              : yield* putStream(key, body, options?.contentType)
          }
        )

        const get = (key: string): Stream.Stream<Uint8Array, BlobStoreError | BlobNotFound> =>
          Stream.unwrap(Effect.gen(function*() {
            yield* validateKey(key)
            const out = yield* send(
              "GetObject",
              key,
              (abortSignal) => client.send(new GetObjectCommand({ Bucket: bucket, Key: key }), { abortSignal })
            )
            // In Node the SDK's body is an IncomingMessage; fromReadable destroys it when the stream ends.
            const body = out.Body as Readable | undefined
            if (body === undefined) return Stream.empty
            return NodeStream.fromReadable<Uint8Array, BlobStoreError>({
              evaluate: () => body,
              onError: (error) =>
                new BlobStoreError({
                  message: `S3 read of ${JSON.stringify(key)} failed: ${messageOf(error)}`,
                  key,
                  cause: error
                })
            })
          })).pipe(Stream.withSpan("BlobStore.get", { attributes: { key } }))

        const head = Effect.fn("BlobStore.head")(function*(key: string) {
          yield* validateKey(key)
          const out = yield* send(
            "HeadObject",
            key,
            (abortSignal) => client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }), { abortSignal })
          )
          return {
            key,
            size: out.ContentLength ?? 0,
            contentType: out.ContentType,
            lastModified: out.LastModified ?? new Date(0)
          } satisfies BlobInfo
        })

        const del = Effect.fn("BlobStore.delete")(function*(key: string) {
          yield* validateKey(key)
          // S3 answers 204 for missing keys too, which makes this idempotent.
          yield* sendOrFail(
            "DeleteObject",
            key,
            (abortSignal) => client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }), { abortSignal })
          )
        })

        const list = Effect.fn("BlobStore.list")(function*(prefix: string) {
          yield* validatePrefix(prefix)
          const entries: Array<BlobEntry> = []
          let token: string | undefined
          do {
            const page = yield* sendOrFail("ListObjectsV2", prefix, (abortSignal) =>
              client.send(
                new ListObjectsV2Command({
                  Bucket: bucket,
                  Prefix: prefix === "" ? undefined : prefix,
                  MaxKeys: pageSize,
                  ContinuationToken: token
                }),
                { abortSignal }
              ))
            for (const object of page.Contents ?? []) {
              if (object.Key !== undefined) entries.push({ key: object.Key, size: object.Size ?? 0 })
            }
            token = page.IsTruncated ? page.NextContinuationToken : undefined
          } while (token !== undefined)
          return entries.sort(compareKeys)
        })

        const presignedUrl = Effect.fn("BlobStore.presignedUrl")(function*(key: string, options: PresignOptions) {
          yield* validateKey(key)
          yield* validatePresign(key, options)
          const command = options.method === "GET"
            ? new GetObjectCommand({ Bucket: bucket, Key: key })
            : new PutObjectCommand({ Bucket: bucket, Key: key })
          const url = yield* sendOrFail(
            "presign",
            key,
            () => getSignedUrl(client, command, { expiresIn: options.expiresInSeconds })
          )
          return Option.some(url)
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
  }
}

const MiB = 1024 * 1024

/** Reserved name prefix for the folder store's own files (temp files, the sidecar tree). */
const RESERVED_PREFIX = ".canopy-"
const META_DIR = `${RESERVED_PREFIX}meta`
const TMP_PREFIX = `${RESERVED_PREFIX}tmp-`

const BlobMetaJson = Schema.fromJsonString(Schema.Struct({ contentType: Schema.optional(Schema.String) }))
const decodeBlobMeta = Schema.decodeUnknownOption(BlobMetaJson)

/** Why `key` is not a valid blob key, or `undefined` if it is. */
export const keyProblem = (key: string): string | undefined => {
  if (key.length === 0) return "it is empty"
  if (Buffer.byteLength(key, "utf8") > 1024) return "it is longer than 1024 bytes"
  if (key.includes("\0")) return "it contains a NUL character"
  if (key.includes("\\")) return "it contains a backslash"
  if (key.startsWith("/") || Path.isAbsolute(key)) return "it is absolute"
  for (const segment of key.split("/")) {
    const problem = segmentProblem(segment)
    if (problem !== undefined) return problem
  }
  return undefined
}

const segmentProblem = (segment: string): string | undefined => {
  if (segment === "") return "it has an empty path segment"
  if (segment === "." || segment === "..") return "it has a '.' or '..' path segment"
  if (segment.startsWith(RESERVED_PREFIX)) return `path segments starting with '${RESERVED_PREFIX}' are reserved`
  return undefined
}

const validateKey = (key: string): Effect.Effect<string, BlobStoreError> => {
  const problem = keyProblem(key)
  return problem === undefined
    ? Effect.succeed(key)
    : Effect.fail(new BlobStoreError({ message: `Invalid blob key ${JSON.stringify(key)}: ${problem}`, key }))
}

/**
 * A list prefix is free-form in its last (partial) segment, but the folders
 * before the last `/` must be valid key segments. Returns those folders.
 */
const validatePrefix = (prefix: string): Effect.Effect<string, BlobStoreError> => {
  const slash = prefix.lastIndexOf("/")
  const dirKey = slash === -1 ? "" : prefix.slice(0, slash)
  const problem = prefix.includes("\0") || prefix.includes("\\") || prefix.startsWith("/")
    ? "it is absolute or contains a NUL or backslash"
    : dirKey === ""
    ? slash === -1 ? undefined : "it has an empty path segment"
    : keyProblem(dirKey)
  return problem === undefined
    ? Effect.succeed(dirKey)
    : Effect.fail(new BlobStoreError({ message: `Invalid list prefix ${JSON.stringify(prefix)}: ${problem}` }))
}

const validatePresign = (key: string, options: PresignOptions): Effect.Effect<void, BlobStoreError> =>
  Number.isInteger(options.expiresInSeconds) && options.expiresInSeconds >= 1 &&
    options.expiresInSeconds <= 7 * 24 * 3600
    ? Effect.void
    : Effect.fail(
      new BlobStoreError({ message: "expiresInSeconds must be an integer between 1 and 604800 (7 days)", key })
    )

const getBytesVia = (get: (key: string) => Stream.Stream<Uint8Array, BlobStoreError | BlobNotFound>) =>
  Effect.fn("BlobStore.getBytes")(function*(key: string) {
    return yield* Stream.mkUint8Array(get(key))
  })

/** S3 lists keys in UTF-8 byte order; sort the same way so both stores agree. */
const compareKeys = (a: BlobEntry, b: BlobEntry) => Buffer.compare(Buffer.from(a.key), Buffer.from(b.key))

const messageOf = (error: unknown) => error instanceof Error ? error.message : String(error)

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

/** Accumulates stream chunks and hands out byte ranges of exact sizes without copying more than once. */
class PartBuffer {
  private chunks: Array<Uint8Array> = []
  size = 0

  push(chunk: Uint8Array) {
    if (chunk.length === 0) return
    this.chunks.push(chunk)
    this.size += chunk.length
  }

  take(n: number): Uint8Array {
    const out = new Uint8Array(n)
    let filled = 0
    while (filled < n) {
      const head = this.chunks[0]
      const used = Math.min(head.length, n - filled)
      out.set(head.subarray(0, used), filled)
      filled += used
      if (used === head.length) this.chunks.shift()
      else this.chunks[0] = head.subarray(used)
    }
    this.size -= n
    return out
  }
}
