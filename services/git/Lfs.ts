import { Context, Data, Effect, Layer, Option, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { createHash, randomUUID } from "node:crypto"
import * as Fs from "node:fs"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"
import type { Readable } from "node:stream"
import { Transform } from "node:stream"
import { pipeline } from "node:stream/promises"
import type { LfsAction, LfsBatchRequest, LfsBatchResponse, LfsObjectResult } from "../../schemas/git/Lfs.ts"
import type { Plan } from "../../schemas/tenancy/Tenancy.ts"
import { BlobStore } from "../storage/BlobStore.ts"
import { perPlan } from "../tenancy/Plans.ts"
import { recordObject, storedObjects } from "./LfsObjectRows.ts"
import { fileStream, GitStorageError, RepoCache } from "./RepoCache.ts"
import type { RepoRecord } from "./Repositories.ts"
import { storageStanding } from "./StorageQuota.ts"

/** Largest LFS object per plan, from the plan table. */
export const lfsMaxFileBytes = perPlan((p) => p.maxFileBytes)

const MiB = 1024 * 1024

/** An LFS request refused with an HTTP status and a message git-lfs shows to the user. */
export class LfsError extends Data.TaggedError("LfsError")<{ readonly status: number; readonly message: string }> {}

export const lfsKey = (repoId: string, oid: string) =>
  `repos/${repoId}/lfs/${oid.slice(0, 2)}/${oid.slice(2, 4)}/${oid}`

const OID = /^[0-9a-f]{64}$/
const PRESIGN_SECONDS = 3600

/** Where the routes live, so batch answers can point the client at them. */
export interface LfsEndpoints {
  /** `…/info/lfs/objects` of the repository, absolute. */
  readonly objectsUrl: string
  /** Headers the client must send back on transfers (its own Authorization). */
  readonly header: Readonly<Record<string, string>>
}

/**
 * Git LFS for one repository (GUIDE §8): the batch API with the basic transfer. Objects
 * are content-addressed in the BlobStore (`repos/<repo>/lfs/…/<oid>`) and count (appear in
 * `lfs_objects`, can be downloaded, add to `lfs_bytes`) only once their SHA-256 and size
 * were verified. Uploads stream through Canopy, which hashes as it stores; when the
 * BlobStore is S3 the batch hands out presigned URLs instead, and `verify` hashes the
 * stored object before it counts.
 */
export class Lfs extends Context.Service<Lfs, {
  batch(
    repo: RepoRecord,
    plan: Plan,
    request: LfsBatchRequest,
    endpoints: LfsEndpoints
  ): Effect.Effect<LfsBatchResponse, LfsError>
  /** Stores an uploaded object after checking its hash and size. */
  upload(repo: RepoRecord, plan: Plan, oid: string, body: Readable): Effect.Effect<void, LfsError>
  /** The object's bytes, when it counts in this repository. */
  download(
    repo: RepoRecord,
    oid: string
  ): Effect.Effect<{ readonly size: number; readonly body: Stream.Stream<Uint8Array, GitStorageError> }, LfsError>
  /** Confirms an upload: the object counts, with this size (verifying a presigned upload first). */
  verify(repo: RepoRecord, oid: string, size: number): Effect.Effect<void, LfsError>
}>()("canopy/git/Lfs") {
  static readonly layer = Layer.effect(
    Lfs,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const blobs = yield* BlobStore
      const cache = yield* RepoCache

      const stored = (repoId: string, oids: ReadonlyArray<string>) =>
        oids.length === 0 ? Effect.succeed(new Map<string, number>()) : storedObjects(sql, repoId, oids).pipe(
          Effect.orDie,
          Effect.map((rows) => new Map(rows.map((row) => [row.oid, row.size])))
        )

      const record = (repoId: string, oid: string, size: number) =>
        recordObject(sql, repoId, oid, size).pipe(Effect.orDie)

      const presign = (key: string, method: "GET" | "PUT") =>
        blobs.presignedUrl(key, { method, expiresInSeconds: PRESIGN_SECONDS }).pipe(
          Effect.orElseSucceed(() => Option.none<string>())
        )

      const batch = Effect.fn("Lfs.batch")(
        function*(repo: RepoRecord, plan: Plan, request: LfsBatchRequest, endpoints: LfsEndpoints) {
          if (request.transfers !== undefined && request.transfers.length > 0 && !request.transfers.includes("basic")) {
            return yield* new LfsError({ status: 422, message: "Only the basic transfer adapter is supported" })
          }
          const valid = request.objects.filter((o) => OID.test(o.oid) && Number.isInteger(o.size) && o.size >= 0)
          const have = yield* stored(repo.id, valid.map((o) => o.oid))
          const limit = lfsMaxFileBytes[plan]
          const storage = request.operation === "upload"
            ? yield* storageStanding(repo.orgId).pipe(Effect.provideService(SqlClient.SqlClient, sql))
            : undefined
          const objects = yield* Effect.forEach(
            request.objects,
            (object) =>
              Effect.gen(function*(): Effect.fn.Return<LfsObjectResult> {
                const { oid, size } = object
                if (!OID.test(oid)) return { oid, size, error: { code: 422, message: "Invalid object id" } }
                if (!Number.isInteger(size) || size < 0) {
                  return { oid, size, error: { code: 422, message: "Invalid size" } }
                }
                const href = `${endpoints.objectsUrl}/${oid}`
                const key = lfsKey(repo.id, oid)
                if (request.operation === "download") {
                  if (have.get(oid) !== size) {
                    return { oid, size, error: { code: 404, message: "Object does not exist" } }
                  }
                  const url = yield* presign(key, "GET")
                  const download: LfsAction = Option.isSome(url)
                    ? { href: url.value, expires_in: PRESIGN_SECONDS }
                    : { href, header: endpoints.header }
                  return { oid, size, authenticated: true, actions: { download } }
                }
                // Already stored: nothing to transfer.
                if (have.get(oid) === size) {
                  return { oid, size, authenticated: true }
                }
                if (storage?.blocked === true) {
                  return { oid, size, error: { code: 507, message: "The organization's storage quota is exceeded" } }
                }
                if (size > limit) {
                  return {
                    oid,
                    size,
                    error: {
                      code: 422,
                      message: `Size ${size} exceeds the ${plan} plan's maximum file size of ${limit / MiB} MB`
                    }
                  }
                }
                const url = yield* presign(key, "PUT")
                const upload: LfsAction = Option.isSome(url)
                  ? { href: url.value, expires_in: PRESIGN_SECONDS }
                  : { href, header: endpoints.header }
                const verify = { href: `${endpoints.objectsUrl}/verify`, header: endpoints.header }
                return { oid, size, authenticated: true, actions: { upload, verify } }
              })
          )
          return { transfer: "basic" as const, objects, hash_algo: "sha256" as const }
        }
      )

      const upload = Effect.fn("Lfs.upload")(function*(repo: RepoRecord, plan: Plan, oid: string, body: Readable) {
        if (!OID.test(oid)) return yield* new LfsError({ status: 422, message: "Invalid object id" })
        const limit = lfsMaxFileBytes[plan]
        const dir = yield* cache.tempDir().pipe(Effect.orDie)
        const file = Path.join(dir, randomUUID())
        yield* Effect.gen(function*() {
          const hash = createHash("sha256")
          let size = 0
          const meter = new Transform({
            transform(chunk: Buffer, _encoding, callback) {
              size += chunk.length
              if (size > limit) return callback(new Error("too large"))
              hash.update(chunk)
              callback(null, chunk)
            }
          })
          const written = yield* Effect.tryPromise({
            try: () => pipeline(body, meter, Fs.createWriteStream(file)),
            catch: () =>
              size > limit
                ? new LfsError({ status: 413, message: `Object exceeds the ${plan} plan's maximum file size` })
                : new LfsError({ status: 400, message: "The upload was interrupted" })
          }).pipe(Effect.map(() => hash.digest("hex")))
          if (written !== oid) {
            return yield* new LfsError({ status: 422, message: `Content does not match object id ${oid}` })
          }
          yield* blobs.put(lfsKey(repo.id, oid), fileStream(file), { contentType: "application/octet-stream" }).pipe(
            Effect.orDie
          )
          yield* record(repo.id, oid, size)
        }).pipe(Effect.ensuring(Effect.promise(() => FsP.rm(dir, { recursive: true, force: true }))))
      })

      const download = Effect.fn("Lfs.download")(function*(repo: RepoRecord, oid: string) {
        const size = OID.test(oid) ? (yield* stored(repo.id, [oid])).get(oid) : undefined
        if (size === undefined) return yield* new LfsError({ status: 404, message: "Object does not exist" })
        const body = blobs.get(lfsKey(repo.id, oid)).pipe(
          Stream.mapError((cause) => new GitStorageError({ message: `LFS object ${oid} unreadable`, cause }))
        )
        return { size, body }
      })

      const verify = Effect.fn("Lfs.verify")(function*(repo: RepoRecord, oid: string, size: number) {
        const have = (yield* stored(repo.id, [oid])).get(oid)
        if (have === size) return
        // A presigned upload went straight to the store: hash what arrived before it counts.
        const hash = createHash("sha256")
        let length = 0
        const exists = yield* Stream.runForEach(blobs.get(lfsKey(repo.id, oid)), (chunk) =>
          Effect.sync(() => {
            length += chunk.length
            hash.update(chunk)
          })).pipe(Effect.as(true), Effect.orElseSucceed(() => false))
        if (!exists) return yield* new LfsError({ status: 404, message: "Object does not exist" })
        if (length !== size || hash.digest("hex") !== oid) {
          yield* blobs.delete(lfsKey(repo.id, oid)).pipe(Effect.ignore)
          return yield* new LfsError({ status: 422, message: "Stored content does not match the object id and size" })
        }
        yield* record(repo.id, oid, size)
      })

      return Lfs.of({ batch, upload, download, verify })
    })
  )
}
