import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { HttpBody } from "effect/http"
import { type OtlpResource, OtlpSerialization, type OtlpTracer } from "effect/observability"
import { encodeTraces, layerProtobufTraces } from "../../services/platform/OtlpTraceEncoding.ts"

type Span = OtlpTracer.ScopeSpan["spans"][number]
type AnyValue = OtlpResource.AnyValue

/** Every kind of attribute value, with the edge cases of each (lengths around one and two length bytes). */
const values: ReadonlyArray<AnyValue> = [
  { stringValue: "" },
  { stringValue: "GET" },
  { stringValue: "x".repeat(42) },
  { stringValue: "y".repeat(43) },
  { stringValue: "z".repeat(200) },
  { stringValue: "héllo ✓ 😀" },
  { stringValue: "ü".repeat(60) },
  { stringValue: "lone \ud800 surrogate" },
  { boolValue: true },
  { boolValue: false },
  { intValue: 0 },
  { intValue: 200 },
  { intValue: 2 ** 40 },
  { intValue: -1 },
  { intValue: "9223372036854775807" },
  { intValue: "-9223372036854775808" },
  { doubleValue: 1.5 },
  { doubleValue: -0 },
  { doubleValue: Number.NaN },
  { arrayValue: { values: [{ stringValue: "a" }, { intValue: 7 }, { arrayValue: { values: [] } }] } },
  { kvlistValue: { values: [{ key: "inner", value: { boolValue: true } }] } },
  { bytesValue: new Uint8Array([0, 1, 255]) },
  {}
]

const attributes = values.map((value, i) => ({ key: `attribute.${i}`, value }))

const span = (i: number, overrides?: Partial<Span>): Span => ({
  traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
  spanId: `00f067aa0ba902${String(i % 100).padStart(2, "0")}`,
  parentSpanId: i % 3 === 0 ? undefined : "00F067AA0BA902B7",
  name: i % 2 === 0 ? "GET" : "Monitors.list",
  kind: i % 6,
  startTimeUnixNano: String(1_764_000_000_000_000_000n + BigInt(i)),
  endTimeUnixNano: String(1_764_000_000_000_500_000n + BigInt(i)),
  attributes: attributes.slice(0, (i % values.length) + 1),
  droppedAttributesCount: i % 4 === 0 ? 3 : 0,
  events: i % 5 === 0
    ? [{
      name: "exception",
      timeUnixNano: "1764000000000900000",
      attributes: [{
        key: "exception.stacktrace",
        value: { stringValue: "Error: boom\n    at x (y.ts:1:2)\n".repeat(20) }
      }],
      droppedAttributesCount: 0
    }]
    : [],
  droppedEventsCount: i % 7 === 0 ? 1 : 0,
  links: i % 4 === 1
    ? [{
      traceId: "0af7651916cd43dd8448eb211c80319c",
      spanId: "b7ad6b7169203331",
      attributes,
      droppedAttributesCount: 2
    }]
    : [],
  droppedLinksCount: 0,
  status: i % 5 === 0 ? { code: 2, message: "boom" } : { code: i % 2 === 0 ? 0 : 1 },
  ...overrides
})

const batch = (spans: Array<Span>): OtlpTracer.TraceData => ({
  resourceSpans: [{
    resource: {
      attributes: [
        { key: "service.name", value: { stringValue: "canopy" } },
        { key: "telemetry.sdk.language", value: { stringValue: "nodejs" } }
      ],
      droppedAttributesCount: 0
    },
    scopeSpans: [{ scope: { name: "effect", version: "4.1.0" }, spans }]
  }]
})

const bytesOf = (layer: typeof OtlpSerialization.layerProtobuf, data: OtlpTracer.TraceData) =>
  Effect.runSync(
    Effect.map(Effect.service(OtlpSerialization.OtlpSerialization), (serialization) => {
      const body = serialization.traces(data) as HttpBody.Uint8Array
      expect(body.contentType).toBe("application/x-protobuf")
      return body.body
    }).pipe(Effect.provide(layer))
  )

describe("OTLP protobuf traces", () => {
  it("writes what Effect's encoder writes, for every kind of field", () => {
    for (const spans of [[span(0)], [span(1), span(2)], Array.from({ length: 40 }, (_, i) => span(i))]) {
      const data = batch(spans)
      expect(Buffer.from(encodeTraces(data))).toEqual(Buffer.from(bytesOf(OtlpSerialization.layerProtobuf, data)))
    }
  })

  it("a batch of thousands of spans (lengths of three bytes and more, the buffer grown)", () => {
    const data = batch(Array.from({ length: 3000 }, (_, i) => span(i)))
    const expected = bytesOf(OtlpSerialization.layerProtobuf, data)
    expect(expected.length).toBeGreaterThan(2 ** 21)
    expect(Buffer.from(encodeTraces(data))).toEqual(Buffer.from(expected))
  })

  it("an empty batch, and spans with nothing optional", () => {
    for (const data of [batch([]), batch([span(2, { attributes: [], name: "" })])]) {
      expect(Buffer.from(encodeTraces(data))).toEqual(Buffer.from(bytesOf(OtlpSerialization.layerProtobuf, data)))
    }
  })

  it("the serialization layer Canopy exports with uses it", () => {
    const data = batch([span(5), span(6)])
    expect(Buffer.from(bytesOf(layerProtobufTraces, data))).toEqual(
      Buffer.from(bytesOf(OtlpSerialization.layerProtobuf, data))
    )
  })
})
