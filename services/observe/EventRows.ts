import { Exit, Schema } from "effect"
import * as SchemaIssue from "effect/SchemaIssue"
import { MAX_BATCH, ObserveEvent } from "../../schemas/Observe.ts"
import { sha256Hex } from "../platform/Crypto.ts"
import { makeId } from "../platform/Ids.ts"
import { decodeEventFast, isoTimestampMillis } from "./FastEventDecoder.ts"
import { culprit, fingerprint, issueTitle } from "./Fingerprint.ts"

/**
 * The pure part of event preparation (`EventPreparation`): splitting a body, validating
 * each entry and turning a validated (and, where the release has source maps,
 * symbolicated) event into its row. Synchronous and without services, so the server and
 * the preparation workers (`PreparationWorker.ts`, type stripping: erasable TypeScript
 * only) run the very same code.
 */

/** An event ready for the group commit; plain data so it can travel to another runner. */
export const PreparedEvent = Schema.Struct({
  id: Schema.String,
  eventId: Schema.NullOr(Schema.String),
  level: Schema.String,
  message: Schema.String,
  /** Event time (Unix ms): the client's, else the receive time. */
  timestamp: Schema.Number,
  receivedAt: Schema.Number,
  release: Schema.NullOr(Schema.String),
  environment: Schema.NullOr(Schema.String),
  userKey: Schema.NullOr(Schema.String),
  /** Null for spans. */
  fingerprint: Schema.NullOr(Schema.String),
  title: Schema.String,
  type: Schema.NullOr(Schema.String),
  culprit: Schema.NullOr(Schema.String),
  /** The validated (and symbolicated) event as JSON text, without the exception's frames. */
  data: Schema.String,
  /** The exception's frames as JSON text, and their hash (stored once per distinct stack). */
  stack: Schema.NullOr(Schema.String),
  stackId: Schema.NullOr(Schema.String),
  span: Schema.NullOr(Schema.Struct({
    traceId: Schema.String,
    spanId: Schema.String,
    parentId: Schema.NullOr(Schema.String),
    name: Schema.String,
    durationMs: Schema.Number,
    status: Schema.Literals(["ok", "error"])
  }))
})
export type PreparedEvent = typeof PreparedEvent.Type

export interface Rejection {
  readonly index: number
  readonly error: string
}

/** A body's entries, or why the whole body is refused (400). */
export type BodyEntries =
  | { readonly entries: ReadonlyArray<unknown>; readonly single: boolean }
  | { readonly invalid: string }

/** A single event is one entry; `{events: [...]}` a batch of 1 to `MAX_BATCH` entries. */
export const bodyEntries = (body: unknown): BodyEntries => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return { invalid: "The body must be an event object or {\"events\": [...]}" }
  }
  const batch = (body as { readonly events?: unknown }).events
  if (batch === undefined) return { entries: [body], single: true }
  if (!Array.isArray(batch)) return { invalid: "events: must be an array" }
  if (batch.length === 0) return { invalid: "events: must not be empty" }
  if (batch.length > MAX_BATCH) return { invalid: `events: at most ${MAX_BATCH} events per batch` }
  return { entries: batch, single: false }
}

export const notJsonMessage = "The body is not valid JSON"

/** A request body's JSON value, or `undefined` when it is not JSON. */
export const parseBody = (bytes: Uint8Array): { readonly body: unknown } | undefined => {
  try {
    return { body: JSON.parse(new TextDecoder().decode(bytes)) as unknown }
  } catch {
    return undefined
  }
}

const decodeEvent = Schema.decodeUnknownExit(ObserveEvent)
const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

const describe = (issue: SchemaIssue.Issue): string =>
  formatIssues(issue).issues.map((entry) => {
    const path = (entry.path ?? []).map((segment) => String(typeof segment === "object" ? segment.key : segment))
    return path.length === 0 ? entry.message : `${path.join(".")}: ${entry.message}`
  }).join("; ")

/** The hand-checked fast path first; the Schema decides (and words the error) otherwise. */
const decode = (raw: unknown): { readonly event: ObserveEvent } | { readonly error: string } => {
  const fast = decodeEventFast(raw)
  if (fast !== undefined) return { event: fast }
  const exit = decodeEvent(raw)
  if (Exit.isSuccess(exit)) return { event: exit.value }
  const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
  return { error: failure === undefined ? "invalid event" : describe(failure.error.issue) }
}

export const validate = (raw: unknown): { readonly event: ObserveEvent } | { readonly error: string } => {
  const decoded = decode(raw)
  if ("error" in decoded) return decoded
  const event = decoded.event
  if (event.level === "span" && event.span === undefined) return { error: "span: required when level is span" }
  if (event.level !== "span" && event.message === undefined) return { error: "message: is required" }
  return { event }
}

export const hasFrames = (event: ObserveEvent) => (event.exception?.stacktrace?.frames.length ?? 0) > 0

/** A stable key for counting distinct users: id, else e-mail, else username, else IP. */
const userKey = (user: ObserveEvent["user"]): string | null =>
  user?.id ?? user?.email ?? user?.username ?? user?.ip_address ?? null

const toMillis = (timestamp: ObserveEvent["timestamp"], fallback: number): number => {
  if (timestamp === undefined) return fallback
  if (typeof timestamp === "number") return timestamp
  return isoTimestampMillis(timestamp) ?? fallback
}

/** What an exception's type and frames alone decide: computed once per distinct stack. */
interface StackFacts {
  readonly stackId: string
  readonly fingerprint: string
  readonly culprit: string | null
}

/** Distinct (type, stack) pairs remembered per thread; past this the memory starts over. */
const maxRememberedStacks = 10_000

// type + "\u0000" + frames JSON → facts. Events of one bug repeat their stack, so the
// fingerprint (filename normalisation, SHA-256) and the stack's hash are computed once.
const stacks = new Map<string, StackFacts>()

const factsOf = (event: ObserveEvent, stack: string): StackFacts => {
  // A custom fingerprint depends on more than the stack: not remembered.
  if (event.fingerprint !== undefined) {
    return { stackId: sha256Hex(stack).slice(0, 32), fingerprint: fingerprint(event), culprit: culprit(event) }
  }
  const key = `${event.exception?.type ?? ""}\u0000${stack}`
  let facts = stacks.get(key)
  if (facts === undefined) {
    facts = { stackId: sha256Hex(stack).slice(0, 32), fingerprint: fingerprint(event), culprit: culprit(event) }
    if (stacks.size >= maxRememberedStacks) stacks.clear()
    stacks.set(key, facts)
  }
  return facts
}

/** The row of a validated (and symbolicated) event: plain synchronous work. */
export const toPrepared = (event: ObserveEvent, receivedAt: number): PreparedEvent => {
  const isSpan = event.level === "span"
  const stackFrames = event.exception?.stacktrace?.frames
  const stack = stackFrames === undefined || stackFrames.length === 0 ? null : JSON.stringify(stackFrames)
  const facts = stack === null || isSpan ? null : factsOf(event, stack)
  const withoutFrames = stack === null ? event : {
    ...event,
    exception: { type: event.exception?.type, value: event.exception?.value }
  }
  const span = event.span
  const message = event.message ?? span?.name ?? ""
  return {
    id: makeId("evt"),
    eventId: event.event_id ?? null,
    level: event.level ?? (event.exception === undefined ? "info" : "error"),
    message,
    timestamp: toMillis(event.timestamp, receivedAt),
    receivedAt,
    release: event.release ?? null,
    environment: event.environment ?? null,
    userKey: userKey(event.user),
    fingerprint: isSpan ? null : facts?.fingerprint ?? fingerprint(event),
    title: isSpan ? message : issueTitle(event) || message,
    type: event.exception?.type ?? null,
    culprit: isSpan ? null : facts === null ? culprit(event) : facts.culprit,
    data: JSON.stringify(withoutFrames),
    stack,
    stackId: stack === null ? null : facts?.stackId ?? sha256Hex(stack).slice(0, 32),
    span: isSpan && span !== undefined
      ? { ...span, parentId: span.parentId ?? null }
      : null
  }
}

/** Rows of entries that need no source maps: the whole preparation in one synchronous loop. */
export const prepareRows = (entries: ReadonlyArray<unknown>, receivedAt: number) => {
  const events: Array<PreparedEvent> = []
  const rejected: Array<Rejection> = []
  for (let index = 0; index < entries.length; index++) {
    const result = validate(entries[index])
    if ("error" in result) rejected.push({ index, error: result.error })
    else events.push(toPrepared(result.event, receivedAt))
  }
  return { events, rejected }
}

/** Whether a prepared row came from an event that source maps could change (frames and a release). */
export const mayHaveMaps = (row: PreparedEvent): row is PreparedEvent & { readonly release: string } =>
  row.release !== null && row.stack !== null
