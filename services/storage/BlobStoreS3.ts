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
import { Effect, Exit, Layer, Option, Redacted, Stream } from "effect"
import type { Readable } from "node:stream"
import {
  type BlobBody,
  type BlobEntry,
  type BlobInfo,
  BlobNotFound,
  BlobStore,
  BlobStoreError,
  compareKeys,
  getBytesVia,
  messageOf,
  MiB,
  type PresignOptions,
  type PutOptions,
  type PutResult,
  type S3Config,
  validateKey,
  validatePrefix,
  validatePresign
} from "./BlobStore.ts"

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
export const layerS3 = (config: S3Config): Layer.Layer<BlobStore, BlobStoreError> =>
  Layer.effect(
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
