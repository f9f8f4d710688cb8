import { createHash } from "node:crypto"
import * as FsP from "node:fs/promises"
import * as Path from "node:path"
import * as Zlib from "node:zlib"

/**
 * Writes a version-2 pack and its version-2 index from a handful of loose objects, in
 * process: what `git pack-objects --window=0` gives for a server-side merge's few new
 * objects (no deltas), without the cost of starting a git process. The pack is named by
 * its checksum, as git names packs.
 */

const TYPE_CODES: Record<string, number> = { commit: 1, tree: 2, blob: 3, tag: 4 }

interface PackedObject {
  readonly sha: Buffer
  readonly offset: number
  readonly crc: number
}

/** A loose object file: zlib of `<type> <size>\0<content>`. */
const readLoose = async (objectsDir: string, sha: string) => {
  const raw = Zlib.inflateSync(await FsP.readFile(Path.join(objectsDir, sha.slice(0, 2), sha.slice(2))))
  const nul = raw.indexOf(0)
  const [type, size] = raw.subarray(0, nul).toString("latin1").split(" ")
  const content = raw.subarray(nul + 1)
  if (TYPE_CODES[type] === undefined || Number(size) !== content.length) {
    throw new Error(`malformed loose object ${sha}`)
  }
  return { type: TYPE_CODES[type], content }
}

/** An entry's header: type and size, 4 then 7 bits a byte, the high bit meaning more. */
const entryHeader = (type: number, size: number) => {
  const bytes: Array<number> = []
  let byte = (type << 4) | (size & 0x0f)
  let rest = Math.floor(size / 16)
  while (rest > 0) {
    bytes.push(byte | 0x80)
    byte = rest & 0x7f
    rest = Math.floor(rest / 128)
  }
  bytes.push(byte)
  return Buffer.from(bytes)
}

const uint32 = (value: number) => {
  const buffer = Buffer.alloc(4)
  buffer.writeUInt32BE(value >>> 0)
  return buffer
}

/** Packs `shas` (loose in `objectsDir`) into `packDir`; answers the pack's name, paths and sizes. */
export const packLooseObjects = async (objectsDir: string, shas: ReadonlyArray<string>, packDir: string) => {
  const chunks: Array<Buffer> = [Buffer.from("PACK"), uint32(2), uint32(shas.length)]
  let offset = 12
  const entries: Array<PackedObject> = []
  for (const sha of shas) {
    const { content, type } = await readLoose(objectsDir, sha)
    const entry = Buffer.concat([entryHeader(type, content.length), Zlib.deflateSync(content, { level: 1 })])
    entries.push({ sha: Buffer.from(sha, "hex"), offset, crc: Zlib.crc32(entry) })
    chunks.push(entry)
    offset += entry.length
  }
  const body = Buffer.concat(chunks)
  const checksum = createHash("sha1").update(body).digest()
  const pack = Buffer.concat([body, checksum])

  entries.sort((a, b) => Buffer.compare(a.sha, b.sha))
  const fanout = Buffer.alloc(256 * 4)
  for (let first = 0, at = 0; first < 256; first++) {
    while (at < entries.length && entries[at].sha[0] <= first) at++
    fanout.writeUInt32BE(at, first * 4)
  }
  const idxBody = Buffer.concat([
    Buffer.from([0xff, 0x74, 0x4f, 0x63]),
    uint32(2),
    fanout,
    ...entries.map((e) => e.sha),
    ...entries.map((e) => uint32(e.crc)),
    ...entries.map((e) => uint32(e.offset)),
    checksum
  ])
  const idx = Buffer.concat([idxBody, createHash("sha1").update(idxBody).digest()])

  const name = `pack-${checksum.toString("hex")}`
  const packPath = Path.join(packDir, `${name}.pack`)
  const idxPath = Path.join(packDir, `${name}.idx`)
  await FsP.mkdir(packDir, { recursive: true })
  // The index last: git only sees a pack once its .idx exists.
  await FsP.writeFile(packPath, pack)
  await FsP.writeFile(idxPath, idx)
  return { name, packPath, idxPath, objects: entries.length, packBytes: pack.length, idxBytes: idx.length }
}
