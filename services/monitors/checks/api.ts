import { Effect } from "effect"
import * as Zlib from "node:zlib"
import { expectStatus, fetchWithRedirects } from "./http.ts"
import type { CheckContext } from "./network.ts"
import { type CheckAssertion, CheckFailure, type CheckSuccess, type CheckTarget } from "./types.ts"

export const MAX_API_BODY_BYTES = 5 * 1024 * 1024

type Segment = string | number

/**
 * Parses the JSONPath subset monitors use: `$`, then `.name`, `[0]`, `["name"]`
 * or `['name']` segments (`$.items[0].id`). `undefined` when the path is invalid.
 */
export const parseJsonPath = (path: string): ReadonlyArray<Segment> | undefined => {
  const text = path.trim()
  if (!text.startsWith("$")) return undefined
  const segments: Array<Segment> = []
  let i = 1
  while (i < text.length) {
    const c = text[i]
    if (c === ".") {
      const match = /^[^.[\]]+/.exec(text.slice(i + 1))
      if (match === null) return undefined
      segments.push(match[0])
      i += 1 + match[0].length
    } else if (c === "[") {
      const rest = text.slice(i)
      const index = /^\[\s*(\d+)\s*\]/.exec(rest)
      const quoted = /^\[\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')\s*\]/.exec(rest)
      if (index !== null) {
        segments.push(Number(index[1]))
        i += index[0].length
      } else if (quoted !== null) {
        segments.push((quoted[1] ?? quoted[2]).replace(/\\(.)/g, "$1"))
        i += quoted[0].length
      } else {
        return undefined
      }
    } else {
      return undefined
    }
  }
  return segments
}

const MISSING: unique symbol = Symbol("missing")

const select = (root: unknown, segments: ReadonlyArray<Segment>): unknown => {
  let current: unknown = root
  for (const segment of segments) {
    if (typeof segment === "number") {
      if (!Array.isArray(current) || segment >= current.length) return MISSING
      current = current[segment]
    } else {
      if (current === null || typeof current !== "object" || !Object.hasOwn(current, segment)) return MISSING
      current = (current as Record<string, unknown>)[segment]
    }
  }
  return current
}

const deepEqual = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]))
  if (
    a !== null && b !== null && typeof a === "object" && typeof b === "object" && !Array.isArray(a) && !Array.isArray(b)
  ) {
    const ka = Object.keys(a)
    const kb = Object.keys(b)
    return ka.length === kb.length &&
      ka.every((k) => Object.hasOwn(b, k) && deepEqual((a as any)[k], (b as any)[k]))
  }
  return false
}

const isScalar = (v: unknown): v is string | number | boolean =>
  typeof v === "string" || typeof v === "number" || typeof v === "boolean"

/** Equality with one leniency: a string compares equal to the number or boolean it spells (`"200"` eq `200`). */
const looselyEqual = (actual: unknown, expected: unknown): boolean =>
  deepEqual(actual, expected) ||
  (isScalar(actual) && isScalar(expected) && typeof actual !== typeof expected &&
    (typeof actual === "string" || typeof expected === "string") && String(actual) === String(expected))

const toNumber = (v: unknown): number | undefined => {
  if (typeof v === "number") return Number.isFinite(v) ? v : undefined
  if (typeof v === "string" && v.trim() !== "") {
    const n = Number(v)
    return Number.isFinite(n) ? n : undefined
  }
  return undefined
}

const show = (v: unknown): string => {
  if (v === MISSING) return "nothing"
  const text = v === undefined ? "undefined" : JSON.stringify(v)
  return text.length > 100 ? `${text.slice(0, 97)}...` : text
}

/** `undefined` when the assertion holds, else the failure sentence. */
export const evaluateAssertion = (json: unknown, assertion: CheckAssertion): string | undefined => {
  const segments = parseJsonPath(assertion.path)
  const describe = assertion.op === "exists" && assertion.value === undefined
    ? `${assertion.path} exists`
    : `${assertion.path} ${assertion.op} ${show(assertion.value)}`
  if (segments === undefined) return `assertion failed: ${describe} (invalid path)`
  const actual = select(json, segments)
  const fail = () => `assertion failed: ${describe} (got ${show(actual)})`
  switch (assertion.op) {
    case "exists": {
      // `value: false` asserts the path is absent
      const shouldExist = assertion.value !== false
      return (actual !== MISSING) === shouldExist ? undefined : fail()
    }
    case "eq":
      return actual !== MISSING && looselyEqual(actual, assertion.value) ? undefined : fail()
    case "neq":
      return actual !== MISSING && looselyEqual(actual, assertion.value) ? fail() : undefined
    case "contains": {
      if (typeof actual === "string") return actual.includes(String(assertion.value)) ? undefined : fail()
      if (Array.isArray(actual)) return actual.some((item) => looselyEqual(item, assertion.value)) ? undefined : fail()
      if (actual !== null && typeof actual === "object") {
        return Object.hasOwn(actual, String(assertion.value)) ? undefined : fail()
      }
      return fail()
    }
    case "lt":
    case "gt": {
      const a = toNumber(actual === MISSING ? undefined : actual)
      const b = toNumber(assertion.value)
      if (a === undefined || b === undefined) return fail()
      return (assertion.op === "lt" ? a < b : a > b) ? undefined : fail()
    }
    default:
      return `assertion failed: unknown operator ${String(assertion.op)}`
  }
}

const decode = (body: Buffer, encoding: string | undefined): Buffer => {
  const options = { maxOutputLength: MAX_API_BODY_BYTES }
  switch (encoding?.trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return Zlib.gunzipSync(body, options)
    case "deflate":
      return Zlib.inflateSync(body, options)
    case "br":
      return Zlib.brotliDecompressSync(body, options)
    default:
      return body
  }
}

/** `api`: like `http`, then the body must be JSON and every assertion must hold. */
export const apiCheck = (context: CheckContext, target: CheckTarget): Effect.Effect<CheckSuccess, CheckFailure> =>
  Effect.gen(function*() {
    const response = yield* fetchWithRedirects(context, target, {
      maxBytes: MAX_API_BODY_BYTES,
      onOverflow: "fail"
    })
    const statusCode = response.statusCode
    yield* expectStatus(target, statusCode)
    const assertions = target.assertions ?? []
    let text: string
    try {
      text = decode(response.body, response.headers["content-encoding"]).toString("utf8")
    } catch {
      return yield* new CheckFailure({ message: "response body could not be decoded", statusCode })
    }
    if (text.trim() === "" && assertions.length === 0) return { statusCode }
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      return yield* new CheckFailure({ message: "response is not JSON", statusCode })
    }
    const failures = assertions.map((assertion) => evaluateAssertion(json, assertion)).filter((f) => f !== undefined)
    if (failures.length > 0) {
      return yield* new CheckFailure({ message: failures.join("; "), statusCode })
    }
    return { statusCode }
  })
