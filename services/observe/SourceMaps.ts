import { FlattenMap, TraceMap } from "@jridgewell/trace-mapping"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import {
  type ListSourceMapsQuery,
  SOURCE_MAP_LIMITS,
  type SourceMapList,
  type SourceMapRecord
} from "../../schemas/observe/SourceMaps.ts"
import { NotFound, ValidationError } from "../../schemas/platform/Errors.ts"
import { makeId } from "../platform/Ids.ts"
import { BlobStore } from "../storage/BlobStore.ts"
import { deleteSourceMap, findSourceMap, mapNamesOfRelease, sourceMapPage, upsertSourceMap } from "./SourceMapRows.ts"
import { type Frame, nameCandidates, normalizeMapName, symbolicateFrames } from "./Symbolication.ts"

export type { Frame } from "./Symbolication.ts"

export interface UploadInput {
  readonly release: string
  /** The minified file the map belongs to (URL, path, `~/path` or basename). */
  readonly name: string
  readonly content: Uint8Array
}

/** How long "these are the maps of org × release" (often: none) is trusted on a runner. */
const INDEX_TTL_MS = 10_000
const MAX_INDEXES = 10_000
/** Parsed maps kept per runner: at most this many, and at most this many bytes of source. */
const MAX_PARSED = 64
const MAX_PARSED_BYTES = 256 * 1024 * 1024

const invalid = (path: string, message: string) =>
  new ValidationError({ message: `Invalid ${path}: ${message}`, details: [{ path, message }] })

/** Parses and checks an uploaded map; a map `TraceMap` cannot read is refused. */
export const parseSourceMap = (content: Uint8Array): TraceMap | string => {
  let json: unknown
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(content))
  } catch {
    return "is not a JSON source map"
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return "is not a JSON source map"
  const map = json as { version?: unknown; mappings?: unknown; sources?: unknown; sections?: unknown }
  if (map.version !== 3) return "must be a version 3 source map"
  const indexed = Array.isArray(map.sections)
  if (!indexed && (typeof map.mappings !== "string" || !Array.isArray(map.sources))) {
    return "must have `mappings` and `sources` (or `sections`)"
  }
  try {
    // An indexed map (`sections`) is flattened into one.
    return indexed
      ? FlattenMap(json as Parameters<typeof FlattenMap>[0])
      : new TraceMap(json as ConstructorParameters<typeof TraceMap>[0])
  } catch (error) {
    return `could not be read: ${String(error)}`
  }
}

/**
 * Source maps per organization and release (GUIDE §7): uploads in the BlobStore, records in
 * `source_maps`, and the symbolication of minified frames for ingest.
 *
 * Ingest calls `symbolicate` for every event, so it stays cheap: each runner remembers the
 * map names of an org × release for a few seconds (an org without maps costs one query per
 * release per 10 s) and keeps a bounded set of parsed maps, keyed by map id (a replaced map
 * gets a new id, so stale parses are never used).
 */
export class SourceMaps extends Context.Service<SourceMaps, {
  upload(orgId: string, input: UploadInput): Effect.Effect<SourceMapRecord, ValidationError>
  list(orgId: string, query: ListSourceMapsQuery): Effect.Effect<SourceMapList>
  get(orgId: string, id: string): Effect.Effect<SourceMapRecord, NotFound>
  remove(orgId: string, id: string): Effect.Effect<void, NotFound>
  /**
   * Maps the frames of `release` that have a source map to their original file, function,
   * line and column (the frame as received kept in `raw`); other frames pass unchanged.
   * Frames are in Sentry order: outermost caller first, the crashing frame last. Never fails:
   * a map that cannot be read leaves its frames as they are.
   */
  symbolicate<F extends Frame>(
    orgId: string,
    release: string | undefined,
    frames: ReadonlyArray<F>
  ): Effect.Effect<ReadonlyArray<F>>
  /**
   * Whether `symbolicate` may change frames of this release (it has maps, or they could
   * not be listed): false lets ingest skip it for a whole batch. Never fails.
   */
  hasMaps(orgId: string, release: string): Effect.Effect<boolean>
}>()("canopy/observe/SourceMaps") {
  static readonly layer = Layer.effect(
    SourceMaps,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const blobs = yield* BlobStore

      // --- caches (per runner) ---------------------------------------------------------
      const indexes = new Map<string, { readonly expiresAt: number; readonly names: Map<string, string> }>()
      const parsed = new Map<string, { readonly map: TraceMap | undefined; readonly bytes: number }>()
      let parsedBytes = 0
      const indexKey = (orgId: string, release: string) => `${orgId}\u0000${release}`

      /** name → map id of one org × release, from cache or one query. */
      const namesOf = (orgId: string, release: string) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const key = indexKey(orgId, release)
          const cached = indexes.get(key)
          if (cached !== undefined && cached.expiresAt > now) return cached.names
          const rows = yield* mapNamesOfRelease(sql, orgId, release)
          const names = new Map(rows.map((row) => [row.name, row.id]))
          indexes.delete(key)
          if (indexes.size >= MAX_INDEXES) indexes.delete(indexes.keys().next().value!)
          indexes.set(key, { expiresAt: now + INDEX_TTL_MS, names })
          return names
        })

      const remember = (id: string, map: TraceMap | undefined, bytes: number) => {
        parsed.set(id, { map, bytes })
        parsedBytes += bytes
        while (parsed.size > MAX_PARSED || (parsedBytes > MAX_PARSED_BYTES && parsed.size > 1)) {
          const [oldest, entry] = parsed.entries().next().value!
          parsed.delete(oldest)
          parsedBytes -= entry.bytes
        }
      }

      /** The parsed map of an id, least recently used evicted first. */
      const mapOf = (orgId: string, id: string) =>
        Effect.gen(function*() {
          const hit = parsed.get(id)
          if (hit !== undefined) {
            parsed.delete(id)
            parsed.set(id, hit)
            return hit.map
          }
          const bytes = yield* blobs.getBytes(blobKey(orgId, id)).pipe(
            Effect.catch(() => Effect.succeed(undefined))
          )
          const map = bytes === undefined ? undefined : parseSourceMap(bytes)
          const usable = typeof map === "string" ? undefined : map
          remember(id, usable, bytes?.byteLength ?? 0)
          return usable
        })

      const blobKey = (orgId: string, id: string) => `sourcemaps/${orgId}/${id}.map`

      // --- records -------------------------------------------------------------------------
      const upload = Effect.fn("SourceMaps.upload")(function*(orgId: string, input: UploadInput) {
        const release = input.release.trim()
        if (release === "" || release.length > SOURCE_MAP_LIMITS.release) {
          return yield* invalid("body.release", `must be 1 to ${SOURCE_MAP_LIMITS.release} characters`)
        }
        const name = normalizeMapName(input.name)
        if (name === "" || name.length > SOURCE_MAP_LIMITS.name) {
          return yield* invalid("body.name", `must name the minified file (1 to ${SOURCE_MAP_LIMITS.name} characters)`)
        }
        const problem = parseSourceMap(input.content)
        if (typeof problem === "string") return yield* invalid("body.file", problem)
        const id = makeId("sm")
        yield* blobs.put(blobKey(orgId, id), input.content, { contentType: "application/json" }).pipe(Effect.orDie)
        const { record, replaced } = yield* upsertSourceMap(sql, {
          id,
          orgId,
          release,
          name,
          size: input.content.byteLength,
          blobKey: blobKey(orgId, id)
        }).pipe(Effect.orDie)
        if (replaced !== null && replaced !== blobKey(orgId, id)) {
          yield* blobs.delete(replaced).pipe(Effect.ignore)
        }
        indexes.delete(indexKey(orgId, release))
        return record
      })

      const list = Effect.fn("SourceMaps.list")(function*(orgId: string, query: ListSourceMapsQuery) {
        return yield* sourceMapPage(sql, orgId, {
          release: query.release,
          limit: query.limit ?? 50,
          offset: query.offset ?? 0
        })
      }, Effect.orDie)

      const notFound = (id: string) => new NotFound({ message: `Source map '${id}' not found` })

      const get = Effect.fn("SourceMaps.get")(function*(orgId: string, id: string) {
        const record = yield* findSourceMap(sql, orgId, id).pipe(Effect.orDie)
        if (Option.isNone(record)) return yield* notFound(id)
        return record.value
      })

      const remove = Effect.fn("SourceMaps.remove")(function*(orgId: string, id: string) {
        const removed = yield* deleteSourceMap(sql, orgId, id).pipe(Effect.orDie)
        if (Option.isNone(removed)) return yield* notFound(id)
        yield* blobs.delete(removed.value.blob_key).pipe(Effect.ignore)
        indexes.delete(indexKey(orgId, removed.value.release))
        const cached = parsed.get(id)
        if (cached !== undefined) {
          parsed.delete(id)
          parsedBytes -= cached.bytes
        }
      })

      // --- symbolication ---------------------------------------------------------------------
      const symbolicate = <F extends Frame>(orgId: string, release: string | undefined, frames: ReadonlyArray<F>) =>
        Effect.gen(function*() {
          if (release === undefined || frames.length === 0) return frames
          const names = yield* namesOf(orgId, release)
          if (names.size === 0) return frames
          const maps = new Map<string, TraceMap | undefined>()
          // The frames of one event mostly share a file: match each file once.
          const byFile = new Map<string, string | undefined>()
          const idOfFile = (file: string) => {
            if (!byFile.has(file)) byFile.set(file, nameCandidates(file).map((name) => names.get(name)).find(Boolean))
            return byFile.get(file)
          }
          const idOf = (frame: Frame) =>
            (frame.abs_path === undefined ? undefined : idOfFile(frame.abs_path)) ??
              (frame.filename === undefined ? undefined : idOfFile(frame.filename))
          const ids = frames.map(idOf)
          for (const id of ids) {
            if (id !== undefined && !maps.has(id)) maps.set(id, yield* mapOf(orgId, id))
          }
          return symbolicateFrames(frames, (_frame, index) => {
            const id = ids[index]
            return id === undefined ? undefined : maps.get(id)
          })
        }).pipe(
          Effect.catchCause((cause) =>
            Effect.as(Effect.logWarning("symbolication failed; frames kept as received", cause), frames)
          )
        )

      const hasMaps = (orgId: string, release: string) =>
        namesOf(orgId, release).pipe(
          Effect.map((names) => names.size > 0),
          // `symbolicate` then meets the same failure, logs it and keeps the frames.
          Effect.catchCause(() => Effect.succeed(true))
        )

      return { upload, list, get, remove, symbolicate, hasMaps }
    })
  )
}
