import { createHash } from "node:crypto"
import * as Zlib from "node:zlib"

/** A commit object a pack stores whole, with the id git gives it. */
export interface ScannedCommit {
  readonly sha: string
  /** The object's content (what `git cat-file commit` prints). */
  readonly object: Buffer
}

const OBJ_COMMIT = 1
const OBJ_TREE = 2
const OBJ_BLOB = 3
const OBJ_TAG = 4
const OBJ_OFS_DELTA = 6
const OBJ_REF_DELTA = 7
const HEADER_BYTES = 12

/** Why a scan stopped before the pack's last object (it never throws). */
export type ScanStop = "malformed" | "too large"

/**
 * Reads the head of a pack (gitformat-pack, version 2 or 3) as it arrives and returns the
 * commit objects stored there whole (type 1; deltified objects are skipped), with their ids:
 * the SHA-1 of `commit <size>\0<content>`. Git writes commits and tags before trees and
 * blobs, so the scan ends (`done`) at the first tree or blob stored whole: a pack's bulk is
 * never inflated, and a commit written later is simply not found. Each object before that
 * is inflated to find where the next starts. Anything it cannot read stops the scan
 * (`stopped`); it never throws, and checks nothing beyond the ids (index-pack validates the pack).
 */
export class PackCommitScanner {
  private buffer: Buffer = Buffer.alloc(0)
  /** Chunks not yet joined to `buffer` (joined once enough bytes are here to go on). */
  private pending: Array<Buffer> = []
  private pendingBytes = 0
  private objectsLeft: number | undefined
  /** Bytes needed before the object at the start of `buffer` is worth another inflate attempt. */
  private wanted = 0
  private seen = 0
  stopped: ScanStop | undefined
  done = false

  constructor(private readonly maxBytes: number) {}

  /** Adds bytes of the pack; returns the commits completed by them. */
  push(chunk: Buffer): ReadonlyArray<ScannedCommit> {
    if (this.stopped !== undefined || this.done) return []
    this.seen += chunk.length
    if (this.seen > this.maxBytes) return this.stop("too large")
    this.pending.push(chunk)
    this.pendingBytes += chunk.length
    return this.buffer.length + this.pendingBytes < this.wanted ? [] : this.scan()
  }

  /** The pack has ended: reads what is left (an object that waited for more bytes). */
  end(): ReadonlyArray<ScannedCommit> {
    return this.stopped !== undefined || this.done ? [] : this.scan()
  }

  private scan(): ReadonlyArray<ScannedCommit> {
    this.buffer = Buffer.concat([this.buffer, ...this.pending])
    this.pending = []
    this.pendingBytes = 0
    const found: Array<ScannedCommit> = []
    try {
      this.readObjects(found)
    } catch {
      this.stop("malformed")
    }
    return found
  }

  private stop(reason: ScanStop): [] {
    this.stopped = reason
    this.buffer = Buffer.alloc(0)
    this.pending = []
    return []
  }

  private readObjects(found: Array<ScannedCommit>) {
    if (this.objectsLeft === undefined) {
      if (this.buffer.length < HEADER_BYTES) return
      const version = this.buffer.readUInt32BE(4)
      if (this.buffer.toString("latin1", 0, 4) !== "PACK" || (version !== 2 && version !== 3)) {
        throw new Error("not a pack")
      }
      this.objectsLeft = this.buffer.readUInt32BE(8)
      this.buffer = this.buffer.subarray(HEADER_BYTES)
    }
    while (this.objectsLeft > 0) {
      const buffer = this.buffer
      // Object header: type in bits 4-6 of the first byte, size in 4 + 7n bits (little-endian groups).
      let at = 0
      let byte = buffer[at++]
      if (byte === undefined) return
      const type = (byte >> 4) & 7
      // Git writes a pack's commits (and tags) first: the rest is trees and blobs, not read.
      if (type === OBJ_TREE || type === OBJ_BLOB) break
      let size = byte & 15
      let shift = 4
      while (byte & 0x80) {
        byte = buffer[at++]
        if (byte === undefined) return
        if (shift > 46) throw new Error("object size too large")
        size += (byte & 0x7f) * 2 ** shift
        shift += 7
      }
      if (type === OBJ_OFS_DELTA) {
        do {
          byte = buffer[at++]
          if (byte === undefined) return
        } while (byte & 0x80)
      } else if (type === OBJ_REF_DELTA) {
        at += 20
      } else if (type !== OBJ_COMMIT && type !== OBJ_TAG) {
        throw new Error(`object type ${type}`)
      }
      if (size > this.maxBytes) return void this.stop("too large")
      if (at >= buffer.length) return
      let inflated: { buffer: Buffer; engine: Zlib.Inflate }
      try {
        // At most the size the header gives (more is a corrupt object, not a reason to allocate).
        inflated = Zlib.inflateSync(buffer.subarray(at), {
          info: true,
          maxOutputLength: Math.max(1, size)
        }) as unknown as typeof inflated
      } catch (error) {
        // The object's zlib stream is not all here yet: try again once the buffer has doubled
        // (so a large object is inflated a bounded number of times), or fail on corrupt data.
        if ((error as { code?: string }).code !== "Z_BUF_ERROR") throw error
        this.wanted = buffer.length * 2
        return
      }
      if (inflated.buffer.length !== size) throw new Error("object size mismatch")
      if (type === OBJ_COMMIT) {
        const sha = createHash("sha1").update(`commit ${size}\0`).update(inflated.buffer).digest("hex")
        found.push({ sha, object: inflated.buffer })
      }
      this.buffer = buffer.subarray(at + inflated.engine.bytesWritten)
      this.wanted = 0
      this.objectsLeft--
    }
    this.done = true
    this.buffer = Buffer.alloc(0)
  }
}
