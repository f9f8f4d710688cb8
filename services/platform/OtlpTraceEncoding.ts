import { Effect, Layer } from "effect"
import { HttpBody } from "effect/http"
import type { OtlpResource, OtlpTracer } from "effect/observability"
import { OtlpSerialization } from "effect/observability"

/**
 * OTLP/HTTP protobuf bodies of traces, written in one pass into one growing buffer. Effect's
 * encoder (`OtlpSerialization.layerProtobuf`) makes a `Uint8Array` per field, a `TextEncoder`
 * per string and a `BigInt` per varint, then copies each level into its parent: about 30 µs
 * and much garbage per span, three times the cost of answering the request the span is about
 * (issue 32 item 5). This writes the same bytes (`test/platform/OtlpTraceEncoding.test.ts`
 * compares them) with a few allocations per batch.
 */

type Span = OtlpTracer.ScopeSpan["spans"][number]
type KeyValue = OtlpResource.KeyValue
type AnyValue = OtlpResource.AnyValue

const LENGTH_DELIMITED = 2
const FIXED64 = 1
const FIXED32 = 5
const VARINT = 0

/** Each character's value as a hex digit, -1 for anything else. */
const hexDigits = new Int8Array(128).fill(-1)
for (let i = 0; i < 16; i++) {
  hexDigits["0123456789abcdef".charCodeAt(i)] = i
  hexDigits["0123456789ABCDEF".charCodeAt(i)] = i
}
const hexDigit = (code: number): number => code < 128 ? hexDigits[code] : -1

class Writer {
  buffer = Buffer.allocUnsafe(64 * 1024)
  at = 0

  ensure(bytes: number): void {
    if (this.at + bytes <= this.buffer.length) return
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.at + bytes))
    this.buffer.copy(grown, 0, 0, this.at)
    this.buffer = grown
  }

  /** An unsigned varint below 2^53 (tags, lengths, counts, enums, small integers). */
  varint(value: number): void {
    this.ensure(10)
    while (value > 127) {
      this.buffer[this.at++] = (value % 128) | 128
      value = Math.floor(value / 128)
    }
    this.buffer[this.at++] = value
  }

  /** Any int64, as protobuf writes it: two's complement in 64 bits. */
  varint64(value: bigint): void {
    let n = BigInt.asUintN(64, value)
    this.ensure(10)
    while (n > 127n) {
      this.buffer[this.at++] = Number(n & 127n) | 128
      n >>= 7n
    }
    this.buffer[this.at++] = Number(n)
  }

  tag(field: number, wireType: number): void {
    this.varint(field * 8 + wireType)
  }

  string(field: number, value: string): void {
    this.tag(field, LENGTH_DELIMITED)
    const length = value.length
    if (length < 43) {
      // Short strings (nearly all keys and names): ASCII written here, the length in one byte.
      this.ensure(1 + 3 * length)
      const start = this.at
      let at = start + 1
      for (let i = 0; i < length; i++) {
        const code = value.charCodeAt(i)
        if (code >= 128) {
          this.buffer[start] = this.buffer.write(value, start + 1, "utf8")
          this.at = start + 1 + this.buffer[start]
          return
        }
        this.buffer[at++] = code
      }
      this.buffer[start] = length
      this.at = at
      return
    }
    const bytes = Buffer.byteLength(value, "utf8")
    this.varint(bytes)
    this.ensure(bytes)
    this.at += this.buffer.write(value, this.at, "utf8")
  }

  optionalString(field: number, value: string | undefined): void {
    if (value !== undefined && value !== "") this.string(field, value)
  }

  /** Hex ids as bytes (`parseInt` of each pair, as Effect does). */
  hex(field: number, hex: string): void {
    this.tag(field, LENGTH_DELIMITED)
    const bytes = hex.length >> 1
    this.varint(bytes)
    this.ensure(bytes)
    for (let i = 0; i < bytes; i++) {
      const high = hexDigit(hex.charCodeAt(2 * i))
      const low = hexDigit(hex.charCodeAt(2 * i + 1))
      // Anything but two hex digits: what parseInt makes of the pair, as Effect writes it.
      this.buffer[this.at++] = high < 0 || low < 0
        ? Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16) & 255
        : (high << 4) | low
    }
  }

  bytes(field: number, value: Uint8Array): void {
    this.tag(field, LENGTH_DELIMITED)
    this.varint(value.length)
    this.ensure(value.length)
    this.buffer.set(value, this.at)
    this.at += value.length
  }

  fixed64(field: number, value: bigint): void {
    this.tag(field, FIXED64)
    this.ensure(8)
    this.buffer.writeBigUInt64LE(BigInt.asUintN(64, value), this.at)
    this.at += 8
  }

  fixed32(field: number, value: number): void {
    this.tag(field, FIXED32)
    this.ensure(4)
    this.buffer.writeUInt32LE(value >>> 0, this.at)
    this.at += 4
  }

  double(field: number, value: number): void {
    this.tag(field, FIXED64)
    this.ensure(8)
    this.buffer.writeDoubleLE(value, this.at)
    this.at += 8
  }

  /** Opens a nested message: one byte reserved for its length, known only at `end`. */
  begin(field: number): number {
    this.tag(field, LENGTH_DELIMITED)
    this.ensure(1)
    return this.at++
  }

  /** Closes the message opened at `start`: its length in front, the body moved if that takes more bytes. */
  end(start: number): void {
    const length = this.at - start - 1
    if (length < 128) {
      this.buffer[start] = length
      return
    }
    let extra = 0
    for (let rest = Math.floor(length / 128); rest > 0; rest = Math.floor(rest / 128)) extra++
    this.ensure(extra)
    this.buffer.copyWithin(start + 1 + extra, start + 1, this.at)
    let at = start
    let value = length
    while (value > 127) {
      this.buffer[at++] = (value % 128) | 128
      value = Math.floor(value / 128)
    }
    this.buffer[at] = value
    this.at += extra
  }
}

const writeAnyValue = (writer: Writer, value: AnyValue): void => {
  if (value.stringValue !== undefined && value.stringValue !== null) return writer.string(1, value.stringValue)
  if (value.boolValue !== undefined && value.boolValue !== null) {
    writer.tag(2, VARINT)
    return writer.varint(value.boolValue ? 1 : 0)
  }
  if (value.intValue !== undefined && value.intValue !== null) {
    writer.tag(3, VARINT)
    const int = value.intValue
    return typeof int === "number" && Number.isSafeInteger(int) && int >= 0
      ? writer.varint(int)
      : writer.varint64(BigInt(int))
  }
  if (value.doubleValue !== undefined && value.doubleValue !== null) return writer.double(4, value.doubleValue)
  if (value.arrayValue !== undefined) {
    const array = writer.begin(5)
    for (const item of value.arrayValue.values) {
      const at = writer.begin(1)
      writeAnyValue(writer, item)
      writer.end(at)
    }
    return writer.end(array)
  }
  if (value.kvlistValue !== undefined) {
    const list = writer.begin(6)
    writeKeyValues(writer, 1, value.kvlistValue.values)
    return writer.end(list)
  }
  if (value.bytesValue !== undefined) return writer.bytes(7, value.bytesValue)
}

const writeKeyValues = (writer: Writer, field: number, values: ReadonlyArray<KeyValue>): void => {
  for (let i = 0; i < values.length; i++) {
    const keyValue = writer.begin(field)
    writer.string(1, values[i].key)
    const value = writer.begin(2)
    writeAnyValue(writer, values[i].value)
    writer.end(value)
    writer.end(keyValue)
  }
}

const writeCount = (writer: Writer, field: number, count: number): void => {
  if (count > 0) {
    writer.tag(field, VARINT)
    writer.varint(count)
  }
}

/** Fields Effect's encoder writes when present, though its spans never carry them. */
interface Optional {
  readonly traceState?: string
  readonly flags?: number
}

const writeSpan = (writer: Writer, span: Span & Optional): void => {
  writer.hex(1, span.traceId)
  writer.hex(2, span.spanId)
  writer.optionalString(3, span.traceState)
  if (span.parentSpanId !== undefined) writer.hex(4, span.parentSpanId)
  writer.string(5, span.name)
  writer.tag(6, VARINT)
  writer.varint(span.kind)
  writer.fixed64(7, BigInt(span.startTimeUnixNano))
  writer.fixed64(8, BigInt(span.endTimeUnixNano))
  writeKeyValues(writer, 9, span.attributes)
  writeCount(writer, 10, span.droppedAttributesCount)
  for (const event of span.events) {
    const at = writer.begin(11)
    writer.fixed64(1, BigInt(event.timeUnixNano))
    writer.string(2, event.name)
    writeKeyValues(writer, 3, event.attributes)
    writeCount(writer, 4, event.droppedAttributesCount)
    writer.end(at)
  }
  writeCount(writer, 12, span.droppedEventsCount)
  for (const link of span.links as ReadonlyArray<Span["links"][number] & Optional>) {
    const at = writer.begin(13)
    writer.hex(1, link.traceId)
    writer.hex(2, link.spanId)
    writer.optionalString(3, link.traceState)
    writeKeyValues(writer, 4, link.attributes)
    writeCount(writer, 5, link.droppedAttributesCount)
    if (link.flags !== undefined) writer.fixed32(6, link.flags)
    writer.end(at)
  }
  writeCount(writer, 14, span.droppedLinksCount)
  const status = writer.begin(15)
  writer.optionalString(2, span.status.message)
  writer.tag(3, VARINT)
  writer.varint(span.status.code)
  writer.end(status)
  if (span.flags !== undefined) writer.fixed32(16, span.flags)
}

type Scope = OtlpTracer.ScopeSpan["scope"] & {
  readonly attributes?: ReadonlyArray<KeyValue>
  readonly droppedAttributesCount?: number
}

/** `TracesData` as protobuf bytes, byte for byte what Effect's encoder writes. */
export const encodeTraces = (data: OtlpTracer.TraceData): Uint8Array => {
  const writer = new Writer()
  for (const resourceSpans of data.resourceSpans) {
    const resourceAt = writer.begin(1)
    const resource = writer.begin(1)
    writeKeyValues(writer, 1, resourceSpans.resource.attributes)
    writeCount(writer, 2, resourceSpans.resource.droppedAttributesCount)
    writer.end(resource)
    for (const scopeSpans of resourceSpans.scopeSpans) {
      const scopeAt = writer.begin(2)
      const scope: Scope = scopeSpans.scope
      const scopeMessage = writer.begin(1)
      writer.string(1, scope.name)
      writer.optionalString(2, scope.version)
      if (scope.attributes !== undefined) writeKeyValues(writer, 3, scope.attributes)
      if (scope.droppedAttributesCount) writeCount(writer, 4, scope.droppedAttributesCount)
      writer.end(scopeMessage)
      for (const span of scopeSpans.spans) {
        const at = writer.begin(2)
        writeSpan(writer, span)
        writer.end(at)
      }
      writer.optionalString(3, scopeSpans.schemaUrl)
      writer.end(scopeAt)
    }
    writer.optionalString(3, resourceSpans.schemaUrl)
    writer.end(resourceAt)
  }
  return writer.buffer.subarray(0, writer.at)
}

/**
 * Effect's protobuf serialization with `encodeTraces` for traces (Canopy exports only traces;
 * metrics and logs keep Effect's encoder).
 */
export const layerProtobufTraces: Layer.Layer<OtlpSerialization.OtlpSerialization> = Layer.effect(
  OtlpSerialization.OtlpSerialization,
  Effect.map(Effect.service(OtlpSerialization.OtlpSerialization), (protobuf) => ({
    ...protobuf,
    traces: (data) => HttpBody.uint8Array(encodeTraces(data), "application/x-protobuf")
  }))
).pipe(Layer.provide(OtlpSerialization.layerProtobuf))
