/**
 * Git's pkt-line framing (gitprotocol-common): a 4-hex-digit length including itself, then
 * the payload; `0000` is a flush. Side-band-64k wraps each pkt in a band byte (1 data,
 * 2 progress, 3 fatal error) with at most 65515 payload bytes.
 */

export const FLUSH = Buffer.from("0000")
export const ZERO_SHA = "0".repeat(40)

export const pkt = (payload: string | Uint8Array): Buffer => {
  const body = typeof payload === "string" ? Buffer.from(payload, "utf8") : Buffer.from(payload)
  return Buffer.concat([Buffer.from((body.length + 4).toString(16).padStart(4, "0")), body])
}

const MAX_BAND_PAYLOAD = 65515

/** `data` on side-band `band`, cut into pkts that fit. */
export const sideband = (band: 1 | 2 | 3, data: Uint8Array): Buffer => {
  const parts: Array<Buffer> = []
  for (let at = 0; at < data.length; at += MAX_BAND_PAYLOAD) {
    parts.push(pkt(Buffer.concat([Buffer.from([band]), data.subarray(at, at + MAX_BAND_PAYLOAD)])))
  }
  return Buffer.concat(parts)
}

/** The result of reading pkt-lines from the start of a buffer. */
export interface PktRead {
  /** Payloads up to the first flush, without their length prefix. */
  readonly lines: ReadonlyArray<Buffer>
  /** Offset just past the flush, or `undefined` when the buffer ends before it. */
  readonly end: number | undefined
}

/** Reads pkt-lines up to the first flush; throws on a malformed length. */
export const readUntilFlush = (buffer: Buffer, start = 0): PktRead => {
  const lines: Array<Buffer> = []
  let at = start
  while (at + 4 <= buffer.length) {
    const text = buffer.toString("latin1", at, at + 4)
    if (!/^[0-9a-f]{4}$/i.test(text)) throw new Error(`malformed pkt-line length ${JSON.stringify(text)}`)
    const length = Number.parseInt(text, 16)
    if (length === 0) return { lines, end: at + 4 }
    if (length < 4) throw new Error(`unexpected special pkt-line ${text}`)
    if (at + length > buffer.length) return { lines, end: undefined }
    lines.push(buffer.subarray(at + 4, at + length))
    at += length
  }
  return { lines, end: undefined }
}
