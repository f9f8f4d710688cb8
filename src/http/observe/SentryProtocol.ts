/**
 * The Sentry wire protocol, translated to Observe events (GUIDE §7): envelopes
 * (newline-delimited items) and store bodies; `event` items become error events,
 * `transaction` items become spans (the transaction itself and its child spans). Other
 * items (sessions, client reports, attachments) are ignored. Pure: no I/O. Streamed
 * spans (`span` items, `application/vnd.sentry.items.span.v2+json`, what
 * `@sentry/node` 10+ sends instead of transactions) become spans too.
 *
 * Sentry timestamps are seconds (float) or ISO strings; ours are ISO strings or epoch
 * milliseconds, so numbers are converted here.
 */

import { MAX_CONTEXT_LINE, MAX_CONTEXT_LINES } from "../../../schemas/observe/Observe.ts"

type Json = Record<string, any>

export interface EnvelopeItem {
  readonly type: string
  readonly payload: unknown
}

export class EnvelopeError extends Error {}

/** Splits an envelope: a header line, then items of a header line and a payload (by `length` or to the newline). */
export const parseEnvelope = (
  bytes: Uint8Array
): { readonly header: Json; readonly items: ReadonlyArray<EnvelopeItem> } => {
  const decoder = new TextDecoder()
  let offset = 0
  const line = () => {
    const end = bytes.indexOf(10, offset)
    const slice = bytes.subarray(offset, end < 0 ? bytes.length : end)
    offset = end < 0 ? bytes.length : end + 1
    return decoder.decode(slice)
  }
  const json = (text: string, what: string) => {
    try {
      return JSON.parse(text) as unknown
    } catch {
      throw new EnvelopeError(`The envelope's ${what} is not valid JSON`)
    }
  }
  const header = json(line(), "header")
  if (typeof header !== "object" || header === null) throw new EnvelopeError("The envelope header must be an object")
  const items: Array<EnvelopeItem> = []
  while (offset < bytes.length) {
    const headerLine = line()
    if (headerLine.trim() === "") continue
    const itemHeader = json(headerLine, "item header") as Json
    let payload: string
    if (typeof itemHeader.length === "number") {
      payload = decoder.decode(bytes.subarray(offset, offset + itemHeader.length))
      offset += itemHeader.length
      if (bytes[offset] === 10) offset++
    } else {
      payload = line()
    }
    const type = String(itemHeader.type ?? "")
    if (type === "event" || type === "transaction" || type === "span") {
      items.push({ type, payload: json(payload, `${type} item`) })
    }
  }
  return { header: header as Json, items }
}

const millis = (value: unknown): number | string | undefined => {
  if (typeof value === "number") return Math.round(value * 1000)
  if (typeof value === "string") return value
  return undefined
}

const stringRecord = (value: unknown): Record<string, string> | undefined => {
  // Tags come as an object or as [key, value] pairs.
  const entries = Array.isArray(value)
    ? value.filter((pair) => Array.isArray(pair) && pair.length === 2)
    : typeof value === "object" && value !== null
    ? Object.entries(value)
    : []
  if (entries.length === 0) return undefined
  return Object.fromEntries(entries.map(([key, item]) => [String(key), String(item)]))
}

const messageOf = (event: Json): string | undefined => {
  const message = event.message ?? event.logentry
  if (typeof message === "string") return message
  if (typeof message === "object" && message !== null) return message.formatted ?? message.message
  return undefined
}

const levels = new Set(["debug", "info", "warning", "error", "fatal"])

/** Context lines as sent, fitted to the event's limits (a long minified line is cut, not refused). */
const contextLines = (lines: unknown): Array<string> | undefined =>
  Array.isArray(lines)
    ? lines.slice(-MAX_CONTEXT_LINES).map((line) => String(line).slice(0, MAX_CONTEXT_LINE))
    : undefined

const contextLine = (line: unknown): string | undefined =>
  typeof line === "string" ? line.slice(0, MAX_CONTEXT_LINE) : undefined

const isRecord = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

/** A Sentry error event as an Observe event (validated afterwards like any other). */
export const fromSentryEvent = (event: Json): Json => {
  const values: Array<Json> = Array.isArray(event.exception?.values)
    ? event.exception.values
    : Array.isArray(event.exception)
    ? event.exception
    : []
  // The last value is the exception that was thrown last (the others are its causes).
  const thrown = values[values.length - 1]
  const frames: Array<Json> = Array.isArray(thrown?.stacktrace?.frames) ? thrown.stacktrace.frames : []
  const breadcrumbs: Array<Json> = Array.isArray(event.breadcrumbs?.values)
    ? event.breadcrumbs.values
    : Array.isArray(event.breadcrumbs)
    ? event.breadcrumbs
    : []
  const message = messageOf(event) ??
    (thrown === undefined ? undefined : [thrown.type, thrown.value].filter(Boolean).join(": ")) ??
    "(no message)"
  return {
    message: message === "" ? "(no message)" : message,
    event_id: typeof event.event_id === "string" ? event.event_id : undefined,
    level: levels.has(event.level) ? event.level : thrown === undefined ? "info" : "error",
    timestamp: millis(event.timestamp),
    platform: typeof event.platform === "string" ? event.platform : undefined,
    sdk: event.sdk === undefined ? undefined : { name: event.sdk.name, version: event.sdk.version },
    release: event.release,
    environment: event.environment,
    user: event.user === undefined
      ? undefined
      : {
        id: event.user.id === undefined ? undefined : String(event.user.id),
        email: event.user.email,
        username: event.user.username,
        ip_address: event.user.ip_address
      },
    tags: stringRecord(event.tags),
    extra: event.extra,
    contexts: isRecord(event.contexts) ? event.contexts : undefined,
    fingerprint: event.fingerprint,
    breadcrumbs: breadcrumbs.map((crumb) => ({
      timestamp: millis(crumb.timestamp),
      category: crumb.category,
      message: crumb.message,
      level: crumb.level
    })),
    exception: thrown === undefined ? undefined : {
      type: thrown.type,
      value: thrown.value,
      stacktrace: {
        frames: frames.map((frame) => ({
          filename: frame.filename,
          abs_path: frame.abs_path,
          module: frame.module,
          function: frame.function,
          lineno: frame.lineno,
          colno: frame.colno,
          in_app: frame.in_app,
          pre_context: contextLines(frame.pre_context),
          context_line: contextLine(frame.context_line),
          post_context: contextLines(frame.post_context)
        }))
      }
    }
  }
}

/** A Sentry span status: only `ok` (or none) is a success. */
const spanStatus = (status: unknown) => status === undefined || status === "ok" ? "ok" : "error"

/** A Sentry transaction as span events: the transaction (root) and each child span. */
export const fromSentryTransaction = (transaction: Json): ReadonlyArray<Json> => {
  const trace: Json = transaction.contexts?.trace ?? {}
  const common = {
    level: "span",
    release: transaction.release,
    environment: transaction.environment,
    platform: typeof transaction.platform === "string" ? transaction.platform : undefined
  }
  const durationMs = (start: unknown, end: unknown) =>
    typeof start === "number" && typeof end === "number" ? Math.max(0, (end - start) * 1000) : 0
  const name = String(transaction.transaction ?? trace.op ?? "transaction")
  const root = {
    ...common,
    message: name,
    timestamp: millis(transaction.start_timestamp ?? transaction.timestamp),
    span: {
      traceId: trace.trace_id,
      spanId: trace.span_id,
      parentId: trace.parent_span_id,
      name,
      durationMs: durationMs(transaction.start_timestamp, transaction.timestamp),
      status: spanStatus(trace.status)
    }
  }
  const children: Array<Json> = Array.isArray(transaction.spans) ? transaction.spans : []
  return [
    root,
    ...children.map((span) => {
      const spanName = String(span.description ?? span.op ?? "span")
      return {
        ...common,
        message: spanName,
        timestamp: millis(span.start_timestamp),
        span: {
          traceId: span.trace_id ?? trace.trace_id,
          spanId: span.span_id,
          parentId: span.parent_span_id,
          name: spanName,
          durationMs: durationMs(span.start_timestamp, span.timestamp),
          status: spanStatus(span.status)
        }
      }
    })
  ]
}

const attribute = (span: Json, name: string): unknown => span.attributes?.[name]?.value

/** Streamed spans (v2 `{items: [...]}`, or one span object): release and environment from attributes or the envelope. */
export const fromSentrySpans = (payload: Json, envelope: Json): ReadonlyArray<Json> => {
  const spans: Array<Json> = Array.isArray(payload.items) ? payload.items : [payload]
  return spans.map((span) => {
    const start = span.start_timestamp
    const end = span.end_timestamp ?? span.timestamp
    const name = String(span.name ?? span.description ?? attribute(span, "sentry.op") ?? "span")
    return {
      level: "span",
      message: name,
      timestamp: millis(start),
      release: attribute(span, "sentry.release") ?? envelope.trace?.release,
      environment: attribute(span, "sentry.environment") ?? envelope.trace?.environment,
      span: {
        traceId: span.trace_id,
        spanId: span.span_id,
        parentId: span.parent_span_id,
        name,
        durationMs: typeof start === "number" && typeof end === "number" ? Math.max(0, (end - start) * 1000) : 0,
        status: spanStatus(span.status)
      }
    }
  })
}

/** The Observe events of a Sentry payload item (`event`, `transaction` or `span`). */
export const fromSentryItem = (item: EnvelopeItem, envelope: Json = {}): ReadonlyArray<unknown> => {
  if (typeof item.payload !== "object" || item.payload === null) return [item.payload]
  const payload = item.payload as Json
  if (item.type === "span") return fromSentrySpans(payload, envelope)
  return item.type === "transaction" || payload.type === "transaction"
    ? fromSentryTransaction(payload)
    : [fromSentryEvent(payload)]
}
