import { Cause, Context, Layer, Logger, References } from "effect"
import type { LogLevel } from "effect/LogLevel"

/** `LOG_FORMAT`: Effect's readable lines (default), or one JSON object per line for log shippers. */
export type LogFormat = "text" | "json"

/** `LOG_LEVEL`: the least level written. */
export const logLevels = ["trace", "debug", "info", "warn", "error", "fatal", "none"] as const
export type LogLevelName = typeof logLevels[number]

const effectLevel: Record<LogLevelName, LogLevel> = {
  trace: "Trace",
  debug: "Debug",
  info: "Info",
  warn: "Warn",
  error: "Error",
  fatal: "Fatal",
  none: "None"
}

/**
 * Where JSON lines go: standard output, unless a test captures them (provide it to the app
 * through `startApp`'s services).
 */
export const LogSink = Context.Reference<(line: string) => void>("canopy/platform/LogSink", {
  defaultValue: () => (line) => {
    process.stdout.write(`${line}\n`)
  }
})

/** A message part as JSON can hold it: errors by their message, anything else as it is. */
const plain = (value: unknown): unknown => {
  if (value instanceof Error) return `${value.name}: ${value.message}`
  if (typeof value === "bigint") return value.toString()
  return value
}

const safeStringify = (record: Record<string, unknown>): string => {
  try {
    return JSON.stringify(record, (_key, value) => typeof value === "bigint" ? value.toString() : value)
  } catch {
    return JSON.stringify({ ...record, message: String(record.message), annotations: undefined })
  }
}

/**
 * One JSON object per line: `timestamp`, `level`, `message`, the log annotations at the top
 * level (`requestId`, `orgId`, `webhookId`…), `traceId` and `spanId` when the fiber is in a
 * span of a trace, `cause` (rendered) for failures. Fields of Effect's own names are not
 * renamed, so a log shipper can be set up once.
 */
export const jsonLogger = Logger.make<unknown, void>(({ cause, date, fiber, logLevel, message }) => {
  const parts = Array.isArray(message) ? message : [message]
  const record: Record<string, unknown> = {
    timestamp: date.toISOString(),
    level: logLevel.toLowerCase(),
    message: parts.length === 1 ? plain(parts[0]) : parts.map(plain)
  }
  for (const [key, value] of Object.entries(fiber.getRef(References.CurrentLogAnnotations))) {
    if (!(key in record)) record[key] = plain(value)
  }
  const span = fiber.cache.span
  if (span !== undefined && span.traceId !== "noop") {
    record.traceId = span.traceId
    record.spanId = span.spanId
  }
  if (cause.reasons.length > 0) record.cause = Cause.pretty(cause)
  fiber.getRef(LogSink)(safeStringify(record))
})

/**
 * The app's loggers and level. JSON replaces Effect's default logger; the logger that copies
 * log lines onto the current span as events stays either way.
 */
export const LoggingLive = (options: { readonly format: LogFormat; readonly level: LogLevelName }) => {
  const level = Layer.succeed(References.MinimumLogLevel, effectLevel[options.level])
  return options.format === "json"
    ? Layer.mergeAll(Logger.layer([jsonLogger, Logger.tracerLogger]), level)
    : level
}
