import { parseIsoTimestamp } from "../../schemas/monitors/Monitors.ts"
import { MAX_CONTEXT_LINE, MAX_CONTEXT_LINES, MAX_CONTEXTS, type ObserveEvent } from "../../schemas/observe/Observe.ts"

/**
 * The ingest hot path's decoder: `ObserveEvent` checked by hand, about ten times cheaper
 * than the generic Schema decoder (measured ~25 µs of ~60 µs of CPU per event).
 *
 * It only ever says "valid, and here is what `Schema.decodeUnknown(ObserveEvent)` returns"
 * (the same fields and values, unknown fields dropped; an object with nothing to drop is
 * returned as is, so its keys may keep the sender's order) or "not sure"
 * (`undefined`). Anything unusual — a failing check, an `undefined` value, a
 * `__proto__` key — is "not sure", and the caller then runs the Schema, which decides and
 * words the 400. So the fast path cannot accept what the Schema refuses, and errors keep
 * their Schema messages. `FastEventDecoder.test.ts` compares both on many inputs.
 *
 * Keep the limits in step with `ObserveEvent` in schemas/observe/Observe.ts.
 */

type Obj = Record<string, unknown>
/** Field name, check, and whether the field is required (`Schema.optional` otherwise). */
type Fields = ReadonlyArray<readonly [string, (value: unknown) => unknown, required?: true]>

/** Thrown inside the decoder to give up; caught once at the top (cheaper than threading results). */
const unsure: unique symbol = Symbol("unsure")

const giveUp = (): never => {
  throw unsure
}

const isObject = (value: unknown): value is Obj => typeof value === "object" && value !== null && !Array.isArray(value)

const object = (value: unknown): Obj => isObject(value) ? value : giveUp()

const string = (value: unknown, max: number, min = 0): string =>
  typeof value === "string" && value.length <= max && value.length >= min ? value : giveUp()

const int = (value: unknown): number => Number.isSafeInteger(value) ? value as number : giveUp()

const finite = (value: unknown): number => typeof value === "number" && Number.isFinite(value) ? value : giveUp()

const boolean = (value: unknown): boolean => typeof value === "boolean" ? value : giveUp()

/** What JSON.parse makes: returned as is, other objects are copied (as the Schema does). */
const isPlain = (source: Obj) => Object.getPrototypeOf(source) === Object.prototype

/** Own (and inherited) enumerable keys: JSON objects have only their own. */
const keyCount = (source: Obj): number => {
  let count = 0
  for (const _ in source) count++
  return count
}

/**
 * The fields of `input` that `fields` names, each through its check; absent optional fields
 * stay absent, a present `undefined` gives up. An object with nothing to drop or change is
 * returned as it is (no copy: most frames and breadcrumbs), else a copy in the order of
 * `fields`, as the Schema builds it.
 */
const struct = (input: unknown, fields: Fields): Obj => {
  const source = object(input)
  let out: Obj | undefined
  let present = 0
  for (let i = 0; i < fields.length; i++) {
    const [key, check, required] = fields[i]
    const value = source[key]
    if (value === undefined) {
      if (required === true || key in source) giveUp()
      continue
    }
    present++
    const checked = check(value)
    if (out === undefined && checked !== value) out = copyFields(source, fields, i)
    if (out !== undefined) out[key] = checked
  }
  if (out !== undefined) return out
  return isPlain(source) && keyCount(source) === present ? source : copyFields(source, fields, fields.length)
}

/** A new object with the fields before index `end` that `source` has (their values unchanged by their checks). */
const copyFields = (source: Obj, fields: Fields, end: number): Obj => {
  const out: Obj = {}
  for (let i = 0; i < end; i++) {
    const key = fields[i][0]
    if (source[key] !== undefined) out[key] = source[key]
  }
  return out
}

/** The array as it is when no item changed, else a copy. */
const array = <A>(value: unknown, max: number, item: (value: unknown) => A, min = 0): Array<A> => {
  if (!Array.isArray(value) || value.length > max || value.length < min) return giveUp()
  let out: Array<A> | undefined
  for (let i = 0; i < value.length; i++) {
    const checked = item(value[i])
    if (out === undefined && checked !== value[i]) out = value.slice(0, i)
    if (out !== undefined) out.push(checked)
  }
  return out ?? (Object.getPrototypeOf(value) === Array.prototype ? value : Array.from(value))
}

const maxString = (max: number) => (value: unknown) => string(value, max)

/**
 * One optional field of a written-out `struct` whose check returns the value unchanged: 1
 * when present and valid, 0 when absent; a present `undefined` or a failed check gives up.
 */
const optionalCheck = (source: Obj, key: string, value: unknown, check: (value: unknown) => unknown): number => {
  if (value === undefined) return key in source ? giveUp() : 0
  check(value)
  return 1
}

/** `optionalCheck` with `maxString(max)`, without a closure per field. */
const optionalString = (source: Obj, key: string, value: unknown, max: number): number => {
  if (value === undefined) return key in source ? giveUp() : 0
  string(value, max)
  return 1
}

const breadcrumbTimestamp = (ts: unknown) => typeof ts === "number" ? finite(ts) : string(ts, 64)

const levels = new Set(["debug", "info", "warning", "error", "fatal", "span"])

const canonicalIso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?Z$/

/**
 * Unix ms of an ISO 8601 timestamp, as `parseIsoTimestamp` reads it, or `undefined`. The
 * form SDKs send (`2026-11-21T10:00:00.000Z`) is read with one `Date.parse`; any other
 * form goes through `parseIsoTimestamp`.
 */
export const isoTimestampMillis = (value: string): number | undefined => {
  if (canonicalIso.test(value)) {
    const millis = Date.parse(value)
    // Date rolls impossible days over (2026-02-30 → March 2): those take the slow path.
    if (!Number.isNaN(millis) && new Date(millis).toISOString().startsWith(value.slice(0, 10))) return millis
  }
  return parseIsoTimestamp(value)?.getTime()
}

/** `IsoTimestamp`, or a finite number ≥ 0 (epoch milliseconds). */
const timestamp = (value: unknown): string | number => {
  if (typeof value === "number") return Number.isFinite(value) && value >= 0 ? value : giveUp()
  return typeof value === "string" && isoTimestampMillis(value) !== undefined ? value : giveUp()
}

/** `pre_context` / `post_context`: checked in place (the array is kept as it is). */
const contextLines = (value: unknown): unknown => {
  if (!Array.isArray(value) || value.length > MAX_CONTEXT_LINES || Object.getPrototypeOf(value) !== Array.prototype) {
    return giveUp()
  }
  for (let i = 0; i < value.length; i++) string(value[i], MAX_CONTEXT_LINE)
  return value
}

const frameFields: Fields = [
  ["filename", maxString(2048)],
  ["abs_path", maxString(2048)],
  ["module", maxString(1024)],
  ["function", maxString(1024)],
  ["lineno", int],
  ["colno", int],
  ["in_app", boolean],
  ["pre_context", contextLines],
  ["context_line", maxString(MAX_CONTEXT_LINE)],
  ["post_context", contextLines]
]
/**
 * `struct(value, frameFields)` written out, as frames are most of an event's objects: each
 * field read by name (an inline-cached load instead of a generic keyed one); every frame
 * check returns its value unchanged, so only extra keys or an odd prototype make a copy.
 */
const frame = (value: unknown): Obj => {
  const source = object(value)
  const present = optionalString(source, "filename", source.filename, 2048) +
    optionalString(source, "abs_path", source.abs_path, 2048) +
    optionalString(source, "module", source.module, 1024) +
    optionalString(source, "function", source.function, 1024) +
    optionalCheck(source, "lineno", source.lineno, int) +
    optionalCheck(source, "colno", source.colno, int) +
    optionalCheck(source, "in_app", source.in_app, boolean) +
    optionalCheck(source, "pre_context", source.pre_context, contextLines) +
    optionalString(source, "context_line", source.context_line, MAX_CONTEXT_LINE) +
    optionalCheck(source, "post_context", source.post_context, contextLines)
  return isPlain(source) && keyCount(source) === present ? source : copyFields(source, frameFields, frameFields.length)
}

const stacktraceFields: Fields = [["frames", (frames) => array(frames, 500, frame), true]]
const exceptionFields: Fields = [
  ["type", maxString(512)],
  ["value", maxString(16_384)],
  ["stacktrace", (stacktrace) => struct(stacktrace, stacktraceFields)]
]

const breadcrumbFields: Fields = [
  ["timestamp", breadcrumbTimestamp],
  ["category", maxString(256)],
  ["message", maxString(8192)],
  ["level", maxString(32)]
]
/** `struct(value, breadcrumbFields)` written out, as `frame` (each check returns its value unchanged). */
const breadcrumb = (value: unknown): Obj => {
  const source = object(value)
  const present = optionalCheck(source, "timestamp", source.timestamp, breadcrumbTimestamp) +
    optionalString(source, "category", source.category, 256) +
    optionalString(source, "message", source.message, 8192) +
    optionalString(source, "level", source.level, 32)
  return isPlain(source) && keyCount(source) === present ?
    source :
    copyFields(source, breadcrumbFields, breadcrumbFields.length)
}

/** A record's own keys copied through `check`; at most `maxKeys` keys. */
const record = (value: unknown, check: (value: unknown) => unknown, maxKeys = Infinity): Obj => {
  const source = object(value)
  const keys = Object.keys(source)
  if (keys.length > maxKeys) giveUp()
  let out: Obj | undefined
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]
    const item = source[key]
    if (key === "__proto__" || item === undefined) giveUp()
    const checked = check(item)
    if (out === undefined && checked !== item) {
      out = {}
      for (let j = 0; j < i; j++) out[keys[j]] = source[keys[j]]
    }
    if (out !== undefined) out[key] = checked
  }
  return out ?? (isPlain(source) ? source : { ...source })
}

const anything = (value: unknown) => value

const spanFields: Fields = [
  ["traceId", (id) => string(id, 128, 1), true],
  ["spanId", (id) => string(id, 128, 1), true],
  ["parentId", maxString(128)],
  ["name", (name) => string(name, 1024, 1), true],
  ["durationMs", (ms) => finite(ms) >= 0 ? ms : giveUp(), true],
  ["status", (status) => status === "ok" || status === "error" ? status : giveUp(), true]
]
const sdkFields: Fields = [["name", maxString(128)], ["version", maxString(64)]]
const userFields: Fields = [
  ["id", maxString(256)],
  ["email", maxString(256)],
  ["username", maxString(256)],
  ["ip_address", maxString(64)]
]

const eventFields: Fields = [
  ["message", (message) => string(message, 16_384, 1)],
  ["event_id", maxString(64)],
  ["level", (level) => typeof level === "string" && levels.has(level) ? level : giveUp()],
  ["timestamp", timestamp],
  ["platform", maxString(64)],
  ["sdk", (sdk) => struct(sdk, sdkFields)],
  ["exception", (exception) => struct(exception, exceptionFields)],
  ["environment", maxString(64)],
  ["release", maxString(200)],
  ["user", (user) => struct(user, userFields)],
  ["tags", (tags) => record(tags, maxString(1024), 100)],
  ["extra", (extra) => record(extra, anything)],
  ["contexts", (contexts) => record(contexts, anything, MAX_CONTEXTS)],
  ["breadcrumbs", (crumbs) => array(crumbs, 200, breadcrumb)],
  ["span", (span) => struct(span, spanFields)],
  ["fingerprint", (parts) => array(parts, 20, maxString(512), 1)]
]

/** The decoded event when the fast checks vouch for it; `undefined` means "ask the Schema". */
export const decodeEventFast = (input: unknown): ObserveEvent | undefined => {
  try {
    return struct(input, eventFields) as ObserveEvent
  } catch (error) {
    if (error === unsure) return undefined
    throw error
  }
}
