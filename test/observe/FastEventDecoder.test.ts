import { describe, expect, it } from "@effect/vitest"
import { Exit, Schema } from "effect"
import { parseIsoTimestamp } from "../../schemas/monitors/Monitors.ts"
import { ObserveEvent } from "../../schemas/observe/Observe.ts"
import { decodeEventFast, isoTimestampMillis } from "../../services/observe/FastEventDecoder.ts"

const decodeWithSchema = Schema.decodeUnknownExit(ObserveEvent)

/** The fast path may only say "valid" when the Schema does, and must then return what it returns. */
const agrees = (input: unknown) => {
  const fast = decodeEventFast(input)
  if (fast === undefined) return
  const exit = decodeWithSchema(input)
  if (!Exit.isSuccess(exit)) throw new Error(`fast path accepted what the Schema refuses: ${JSON.stringify(input)}`)
  // Same fields and values; key order may follow the sender where nothing was dropped.
  expect(fast).toStrictEqual(exit.value)
  expect(JSON.parse(JSON.stringify(fast))).toStrictEqual(JSON.parse(JSON.stringify(exit.value)))
}

const realistic = (n: number) => ({
  message: `Cannot read properties of undefined (reading 'x') for id ${n}`,
  level: "error",
  platform: "javascript",
  timestamp: "2026-11-21T10:00:00.000Z",
  release: "web@1.2.0",
  environment: "production",
  unknownField: { dropped: true },
  sdk: { name: "canopy.javascript", version: "1.0.0", integrations: ["x"] },
  user: { id: `user-${n}`, email: `user${n}@example.com`, segment: "paid" },
  tags: { browser: "Chrome 131", region: "eu" },
  extra: { cart: { items: 3 }, flag: null },
  contexts: { runtime: { name: "node", version: "v24.1.0" }, os: { name: "Linux" }, trace: { trace_id: "t" } },
  exception: {
    type: "TypeError",
    value: "Cannot read properties",
    mechanism: { handled: false },
    stacktrace: {
      frames: Array.from({ length: 8 + (n % 13) }, (_, i) => ({
        filename: `src/file${i}.ts`,
        function: `fn${i}`,
        lineno: 10 + i,
        colno: 1 + i,
        in_app: i >= 3,
        pre_context: ["function f(x) {", "  if (!x) throw new Error()"],
        context_line: "  return x.y",
        post_context: ["}"]
      }))
    }
  },
  breadcrumbs: Array.from({ length: 5 }, (_, i) => ({
    timestamp: i % 2 === 0 ? "2026-11-21T09:59:59.000Z" : 1_763_719_199.5,
    category: "http",
    message: `GET /api/${i} 200`,
    level: "info",
    data: { status: 200 }
  })),
  fingerprint: n % 3 === 0 ? ["{{ default }}", "checkout"] : undefined
})

/** Deterministic pseudo-random numbers (mulberry32). */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

/** Stands for "delete the key" among the replacement values. */
const remove = Symbol("remove")

const oddValues: ReadonlyArray<unknown> = [
  remove,
  undefined,
  null,
  0,
  -1,
  1.5,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  2 ** 60,
  "",
  "x",
  "y".repeat(65),
  "z".repeat(2049),
  "w".repeat(16_385),
  true,
  [],
  ["a"],
  Array.from({ length: 21 }, () => "p"),
  {},
  { a: 1 },
  "2026-02-30T00:00:00Z",
  "2026-11-21T24:00:00Z",
  "2026-11-21 10:00:00+02:00",
  "2026-11-21",
  "span",
  "ok",
  "fatal"
]

/** Every path to a value inside `value` (object keys and array indexes). */
const paths = (value: unknown, prefix: ReadonlyArray<string | number> = []): Array<Array<string | number>> => {
  if (typeof value !== "object" || value === null) return []
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value)
  return entries.flatMap(([key, v]) => [[...prefix, key], ...paths(v, [...prefix, key])])
}

const withValue = (value: unknown, path: ReadonlyArray<string | number>, replacement: unknown): unknown => {
  const [head, ...rest] = path
  const copy: any = Array.isArray(value) ? [...value] : { ...(value as object) }
  if (rest.length === 0 && replacement === remove) delete copy[head]
  else copy[head] = rest.length === 0 ? replacement : withValue(copy[head], rest, replacement)
  return copy
}

describe("the hand-checked ingest decoder", () => {
  it("takes realistic events itself and returns exactly what the Schema returns", () => {
    for (let n = 0; n < 30; n++) {
      const event = JSON.parse(JSON.stringify(realistic(n)))
      expect(decodeEventFast(event)).toBeDefined()
      agrees(event)
    }
    const span = {
      level: "span",
      timestamp: 1_763_719_200_000,
      span: { traceId: "t1", spanId: "s1", parentId: "p1", name: "GET /", durationMs: 12.5, status: "ok" }
    }
    expect(decodeEventFast(span)).toBeDefined()
    agrees(span)
  })

  it("never accepts what the Schema refuses, whatever single field is changed (seeded fuzz)", () => {
    const next = random(42)
    const base = JSON.parse(JSON.stringify(realistic(1)))
    const span = { level: "span", span: { traceId: "t", spanId: "s", name: "n", durationMs: 1, status: "error" } }
    let accepted = 0
    for (let i = 0; i < 4000; i++) {
      const subject = i % 4 === 0 ? span : base
      const targets = [...paths(subject), ["message"], ["tags", "__proto__"], ["fingerprint"], ["span"], ["level"]]
      const path = targets[Math.floor(next() * targets.length)]
      const mutated = withValue(subject, path, oddValues[Math.floor(next() * oddValues.length)])
      agrees(mutated)
      if (decodeEventFast(mutated) !== undefined) accepted++
    }
    // Most mutations keep a valid event (an odd value in a free-form field); those stay on the fast path.
    expect(accepted).toBeGreaterThan(500)
  })

  it("returns objects with nothing to drop as they are, and copies the ones with unknown fields", () => {
    const frame = { filename: "src/a.ts", function: "f", lineno: 1, colno: 2, in_app: true }
    const crumb = { category: "http", message: "GET /", unknown: 1 }
    const input = { message: "m", tags: { a: "b" }, exception: { type: "E", stacktrace: { frames: [frame] } } }
    const fast = decodeEventFast({ ...input, breadcrumbs: [crumb] })!
    expect(fast.exception!.stacktrace!.frames[0]).toBe(frame)
    expect(fast.exception!.stacktrace!.frames).toBe(input.exception.stacktrace.frames)
    expect(fast.tags).toBe(input.tags)
    expect(fast.breadcrumbs![0]).toEqual({ category: "http", message: "GET /" })
    expect(fast.breadcrumbs![0]).not.toHaveProperty("unknown")
    agrees({ ...input, breadcrumbs: [crumb] })
  })

  it("gives up on bodies that are not event objects", () => {
    for (const input of [null, [], "event", 42, { message: 1 }, { tags: JSON.parse("{\"__proto__\": \"x\"}") }]) {
      expect(decodeEventFast(input)).toBeUndefined()
    }
  })

  it("reads timestamps as parseIsoTimestamp does", () => {
    for (
      const value of [
        "2026-11-21T10:00:00.000Z",
        "2026-11-21T10:00:00Z",
        "2026-11-21T10:00:00.5Z",
        "2024-02-29T23:59:59.999Z",
        "2026-02-29T10:00:00.000Z",
        "2026-02-30T00:00:00Z",
        "2026-11-21T24:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-11-21T10:00:00+02:00",
        "2026-11-21 10:00:00 02:00",
        "2026-11-21",
        "0000-01-01T00:00:00Z",
        "not a date"
      ]
    ) {
      expect(isoTimestampMillis(value)).toBe(parseIsoTimestamp(value)?.getTime())
    }
  })
})
