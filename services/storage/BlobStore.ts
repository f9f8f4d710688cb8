import { Context, Effect, Option, Redacted, Schema, Stream } from "effect"
import * as Path from "node:path"

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
}>()("canopy/storage/BlobStore") {
}

export const MiB = 1024 * 1024

/** Reserved name prefix for the folder store's own files (temp files, the sidecar tree). */
export const RESERVED_PREFIX = ".canopy-"

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

export const segmentProblem = (segment: string): string | undefined => {
  if (segment === "") return "it has an empty path segment"
  if (segment === "." || segment === "..") return "it has a '.' or '..' path segment"
  if (segment.startsWith(RESERVED_PREFIX)) return `path segments starting with '${RESERVED_PREFIX}' are reserved`
  return undefined
}

export const validateKey = (key: string): Effect.Effect<string, BlobStoreError> => {
  const problem = keyProblem(key)
  return problem === undefined
    ? Effect.succeed(key)
    : Effect.fail(new BlobStoreError({ message: `Invalid blob key ${JSON.stringify(key)}: ${problem}`, key }))
}

/**
 * A list prefix is free-form in its last (partial) segment, but the folders
 * before the last `/` must be valid key segments. Returns those folders.
 */
export const validatePrefix = (prefix: string): Effect.Effect<string, BlobStoreError> => {
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

export const validatePresign = (key: string, options: PresignOptions): Effect.Effect<void, BlobStoreError> =>
  Number.isInteger(options.expiresInSeconds) && options.expiresInSeconds >= 1 &&
    options.expiresInSeconds <= 7 * 24 * 3600
    ? Effect.void
    : Effect.fail(
      new BlobStoreError({ message: "expiresInSeconds must be an integer between 1 and 604800 (7 days)", key })
    )

export const getBytesVia = (get: (key: string) => Stream.Stream<Uint8Array, BlobStoreError | BlobNotFound>) =>
  Effect.fn("BlobStore.getBytes")(function*(key: string) {
    return yield* Stream.mkUint8Array(get(key))
  })

/** S3 lists keys in UTF-8 byte order; sort the same way so both stores agree. */
export const compareKeys = (a: BlobEntry, b: BlobEntry) => Buffer.compare(Buffer.from(a.key), Buffer.from(b.key))

export const messageOf = (error: unknown) => error instanceof Error ? error.message : String(error)
