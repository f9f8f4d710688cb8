import { Schema } from "effect"
import { eventType } from "../events/Events.ts"
import { ValidationError } from "../platform/Errors.ts"
import { Email } from "../tenancy/Tenancy.ts"

/**
 * Monitors and heartbeats (spec "Monitor", "Heartbeat"; GUIDE §6).
 *
 * Wire choices where the spec is silent:
 * - Optional monitor settings that are unset (`body`, `assertions`, `dnsRecordType`,
 *   `expectedValue`, `degradedThresholdMs`) are returned as `null`, never omitted; PATCH
 *   with `null` clears them.
 * - Heartbeats omit `statusCode` and `error` when they do not apply.
 * - Uptime figures are percentages floored to 3 decimals (so any downtime shows below 100).
 */

export const CheckType = Schema.Literals(["http", "api", "tcp", "dns", "websocket"])
export type CheckType = typeof CheckType.Type

export const HttpMethod = Schema.Literals(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
export type HttpMethod = typeof HttpMethod.Type

export const MonitorStatus = Schema.Literals(["pending", "up", "degraded", "down", "paused"])
export type MonitorStatus = typeof MonitorStatus.Type

export const HeartbeatStatus = Schema.Literals(["up", "degraded", "down"])
export type HeartbeatStatus = typeof HeartbeatStatus.Type

export const AssertionOp = Schema.Literals(["eq", "neq", "contains", "exists", "lt", "gt"])
export type AssertionOp = typeof AssertionOp.Type

export const DnsRecordType = Schema.Literals(["A", "AAAA", "CNAME", "MX", "TXT", "NS"])
export type DnsRecordType = typeof DnsRecordType.Type

/** A JSON assertion of an `api` check: `{path: "$.a.b", op, value?}` (GUIDE §6). */
export const MonitorAssertion = Schema.Struct({
  path: Schema.String.check(
    Schema.isPattern(/^\$/, { message: "must be a JSONPath starting with $" }),
    Schema.isMaxLength(500)
  ),
  op: AssertionOp,
  value: Schema.optional(Schema.Union([Schema.String, Schema.Finite, Schema.Boolean, Schema.Null]))
})
export type MonitorAssertion = typeof MonitorAssertion.Type

// --- bounds ------------------------------------------------------------------------------

export const MONITOR_DEFAULTS = {
  checkType: "http",
  method: "GET",
  frequency: 60,
  timeout: 30,
  expectedCode: 200,
  active: true,
  retries: 1,
  retryInterval: 20
} as const

const between = (minimum: number, maximum: number) => Schema.Int.check(Schema.isBetween({ minimum, maximum }))

export const MonitorName = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100))
export const MonitorUrl = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(2048))
export const Frequency = between(60, 3600)
export const Timeout = between(1, 120)
export const ExpectedCode = between(100, 599)
export const Retries = between(0, 10)
export const RetryInterval = between(5, 3600)
export const DegradedThresholdMs = between(1, 120_000)

const headerName = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,256}$/

/** Header names are HTTP tokens; values carry no line breaks. At most 50 headers. */
export const MonitorHeaders = Schema.Record(
  Schema.String,
  Schema.String.check(
    Schema.isPattern(/^[^\r\n\0]*$/, { message: "must not contain line breaks" }),
    Schema.isMaxLength(8192)
  )
).check(
  Schema.isMaxProperties(50),
  // A key filter on the Record would silently drop bad names; report them instead.
  Schema.makeFilter((headers) =>
    Object.keys(headers).filter((name) => !headerName.test(name)).map((name) => ({
      path: [name],
      issue: "must be a valid HTTP header name"
    }))
  )
)

export const MonitorBody = Schema.String.check(Schema.isMaxLength(65_536))
export const MonitorAssertions = Schema.Array(MonitorAssertion).check(Schema.isMaxLength(20))
export const ExpectedValue = Schema.String.check(Schema.isMaxLength(1000))
/** Extra addresses alerted when the monitor goes down or recovers (besides owners and admins). */
export const AlertEmails = Schema.Array(Email.check(Schema.isMaxLength(254))).check(Schema.isMaxLength(20))

// --- cross-field rules -------------------------------------------------------------------

/** The settings whose combination is constrained (after defaults and, on PATCH, the stored values). */
export interface MonitorRuleInput {
  readonly checkType: CheckType
  readonly url: string
  readonly frequency: number
  readonly timeout: number
  readonly assertions?: ReadonlyArray<unknown> | null | undefined
  readonly dnsRecordType?: string | null | undefined
  readonly expectedValue?: string | null | undefined
}

export interface FieldIssue {
  readonly field: string
  readonly message: string
}

const parse = (url: string): URL | undefined => {
  try {
    return new URL(url)
  } catch {
    return undefined
  }
}

/** Why `url` does not suit `checkType`, or undefined when it does. */
export const urlIssue = (checkType: CheckType, url: string): string | undefined => {
  const parsed = parse(url)
  switch (checkType) {
    case "http":
    case "api":
      return parsed !== undefined && (parsed.protocol === "http:" || parsed.protocol === "https:") &&
          parsed.hostname !== ""
        ? undefined
        : `must be an http:// or https:// URL for ${checkType} checks`
    case "tcp": {
      const port = Number(parsed?.port)
      return parsed !== undefined && parsed.protocol === "tcp:" && parsed.hostname !== "" && parsed.port !== "" &&
          Number.isInteger(port) && port >= 1 && port <= 65535 && (parsed.pathname === "" || parsed.pathname === "/")
        ? undefined
        : "must be tcp://host:port for tcp checks"
    }
    case "dns":
      return parsed !== undefined && parsed.protocol === "dns:" && parsed.hostname !== "" && parsed.port === "" &&
          (parsed.pathname === "" || parsed.pathname === "/")
        ? undefined
        : "must be dns://name for dns checks"
    case "websocket":
      return parsed !== undefined && (parsed.protocol === "ws:" || parsed.protocol === "wss:") &&
          parsed.hostname !== ""
        ? undefined
        : "must be a ws:// or wss:// URL for websocket checks"
  }
}

/**
 * The rules that span fields: `url` suits `checkType`; `timeout` is below `frequency`;
 * `assertions` only on `api` checks; `dnsRecordType`/`expectedValue` only on `dns` checks.
 */
export const monitorRuleIssues = (input: MonitorRuleInput): ReadonlyArray<FieldIssue> => {
  const issues: Array<FieldIssue> = []
  const url = urlIssue(input.checkType, input.url)
  if (url !== undefined) issues.push({ field: "url", message: url })
  if (input.timeout >= input.frequency) {
    issues.push({
      field: "timeout",
      message: `must be less than frequency (${input.frequency} seconds)`
    })
  }
  if (input.checkType !== "api" && input.assertions != null && input.assertions.length > 0) {
    issues.push({ field: "assertions", message: "only apply to api checks" })
  }
  if (input.checkType !== "dns" && input.dnsRecordType != null) {
    issues.push({ field: "dnsRecordType", message: "only applies to dns checks" })
  }
  if (input.checkType !== "dns" && input.expectedValue != null) {
    issues.push({ field: "expectedValue", message: "only applies to dns checks" })
  }
  return issues
}

/**
 * A 400 for issues found outside Schema decoding (PATCH against the stored monitor). Paths
 * follow the SchemaErrors middleware's `<slot>.<field>` form: these inputs are request bodies.
 */
export const monitorValidationError = (issues: ReadonlyArray<FieldIssue>): ValidationError => {
  const details = issues.map((issue) => ({ path: `body.${issue.field}`, message: issue.message }))
  return new ValidationError({
    message: details.length === 1
      ? `Invalid ${details[0].path}: ${details[0].message}`
      : "The request body is invalid",
    details
  })
}

// --- requests ----------------------------------------------------------------------------

const settings = {
  method: Schema.optionalKey(HttpMethod),
  checkType: Schema.optionalKey(CheckType),
  frequency: Schema.optionalKey(Frequency),
  timeout: Schema.optionalKey(Timeout),
  expectedCode: Schema.optionalKey(ExpectedCode),
  headers: Schema.optionalKey(MonitorHeaders),
  body: Schema.optionalKey(Schema.NullOr(MonitorBody)),
  active: Schema.optionalKey(Schema.Boolean),
  assertions: Schema.optionalKey(Schema.NullOr(MonitorAssertions)),
  dnsRecordType: Schema.optionalKey(Schema.NullOr(DnsRecordType)),
  expectedValue: Schema.optionalKey(Schema.NullOr(ExpectedValue)),
  degradedThresholdMs: Schema.optionalKey(Schema.NullOr(DegradedThresholdMs)),
  retries: Schema.optionalKey(Retries),
  retryInterval: Schema.optionalKey(RetryInterval),
  alertEmails: Schema.optionalKey(AlertEmails)
}

/** POST body: `name` and `url` required, everything else defaults (`MONITOR_DEFAULTS`). */
export const CreateMonitor = Schema.Struct({
  name: MonitorName,
  url: MonitorUrl,
  ...settings
}).check(Schema.makeFilter((input) =>
  monitorRuleIssues({
    checkType: input.checkType ?? MONITOR_DEFAULTS.checkType,
    url: input.url,
    frequency: input.frequency ?? MONITOR_DEFAULTS.frequency,
    timeout: input.timeout ?? MONITOR_DEFAULTS.timeout,
    assertions: input.assertions,
    dnsRecordType: input.dnsRecordType,
    expectedValue: input.expectedValue
  }).map((issue) => ({ path: [issue.field], issue: issue.message }))
)).annotate({
  examples: [
    { name: "Homepage", url: "https://example.com/", frequency: 60, timeout: 10 },
    {
      name: "Orders API",
      url: "https://api.example.com/health",
      checkType: "api",
      assertions: [{ path: "$.status", op: "eq", value: "ok" }],
      degradedThresholdMs: 800,
      retries: 2
    },
    { name: "Database", url: "tcp://db.example.com:5432", checkType: "tcp" }
  ]
})
export type CreateMonitor = typeof CreateMonitor.Type

/**
 * PATCH body: any subset of the create fields. Fields are `optionalKey`: absent means
 * unchanged, and `null` is refused where the field is not nullable (the JSON codec would
 * otherwise read `null` as absent and the PATCH would silently change nothing). The cross-field rules are checked by the
 * service against the stored monitor merged with the patch (400 naming the field).
 */
export const UpdateMonitor = Schema.Struct({
  name: Schema.optionalKey(MonitorName),
  url: Schema.optionalKey(MonitorUrl),
  ...settings
}).annotate({ examples: [{ active: false }, { frequency: 300, timeout: 20 }] })
export type UpdateMonitor = typeof UpdateMonitor.Type

export const ListMonitorsQuery = {
  active: Schema.optional(Schema.Boolean),
  limit: Schema.optional(between(1, 100)),
  offset: Schema.optional(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)))
}

const isoPattern = /^\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)?)?$/

/**
 * An ISO 8601 timestamp: a date (UTC midnight), or a date and time with an optional zone (a
 * time without a zone is taken as UTC).
 */
export const parseIsoTimestamp = (input: string): Date | undefined => {
  // An unencoded `+02:00` in a query string arrives as ` 02:00`.
  const value = input.replace(/^(\S+[Tt]\S+) (\d{2}(?::?\d{2})?)$/, "$1+$2")
  if (!isoPattern.test(value)) return undefined
  const hasTime = /[Tt ]/.test(value)
  const hasZone = /(?:[Zz]|[+-]\d{2}(?::?\d{2})?)$/.test(value.slice(10))
  const normalized = hasTime && !hasZone ? `${value.replace(" ", "T")}Z` : value.replace(" ", "T")
  const date = new Date(normalized)
  if (Number.isNaN(date.getTime())) return undefined
  // `Date` rolls impossible days over (2026-02-30 → March 2): refuse them.
  const day = value.slice(0, 10)
  return new Date(`${day}T00:00:00Z`).toISOString().slice(0, 10) === day ? date : undefined
}

export const IsoTimestamp = Schema.String.check(
  Schema.makeFilter((value: string) => parseIsoTimestamp(value) !== undefined, {
    message: "must be an ISO 8601 timestamp (e.g. 2026-11-21T10:00:00.000Z)"
  })
)

/** Heartbeat list query; `from` and `to` are inclusive bounds on the check time. */
export const ListHeartbeatsQuery = Schema.Struct({
  from: Schema.optional(IsoTimestamp),
  to: Schema.optional(IsoTimestamp),
  limit: Schema.optional(between(1, 1000))
}).check(Schema.makeFilter((query) => {
  if (query.from === undefined || query.to === undefined) return undefined
  const from = parseIsoTimestamp(query.from)
  const to = parseIsoTimestamp(query.to)
  return from !== undefined && to !== undefined && from.getTime() > to.getTime()
    ? { path: ["from"], issue: "must not be after to" }
    : undefined
}))
export type ListHeartbeatsQuery = typeof ListHeartbeatsQuery.Type

// --- responses ---------------------------------------------------------------------------

export const Heartbeat = Schema.Struct({
  timestamp: Schema.String,
  status: HeartbeatStatus,
  /** Milliseconds. */
  responseTime: Schema.Number,
  region: Schema.String,
  statusCode: Schema.optional(Schema.Int),
  error: Schema.optional(Schema.String)
})
export type Heartbeat = typeof Heartbeat.Type

export const Monitor = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  url: Schema.String,
  /** `null` for checks that send no HTTP request (tcp, dns, websocket). */
  method: Schema.NullOr(HttpMethod),
  checkType: CheckType,
  frequency: Schema.Int,
  timeout: Schema.Int,
  /** `null` for checks that read no HTTP status (tcp, dns, websocket). */
  expectedCode: Schema.NullOr(Schema.Int),
  headers: Schema.Record(Schema.String, Schema.String),
  body: Schema.NullOr(Schema.String),
  active: Schema.Boolean,
  status: MonitorStatus,
  assertions: Schema.NullOr(Schema.Array(MonitorAssertion)),
  dnsRecordType: Schema.NullOr(DnsRecordType),
  expectedValue: Schema.NullOr(Schema.String),
  degradedThresholdMs: Schema.NullOr(Schema.Int),
  retries: Schema.Int,
  retryInterval: Schema.Int,
  alertEmails: Schema.Array(Schema.String),
  /** Percentages; `uptime24h` everywhere, `uptime7d`/`uptime30d` on get-by-id, create and update. */
  uptime24h: Schema.Number,
  uptime7d: Schema.optional(Schema.Number),
  uptime30d: Schema.optional(Schema.Number),
  lastCheckedAt: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  updatedAt: Schema.String,
  /** Only on get-by-id: the 50 newest, newest first. */
  heartbeats: Schema.optional(Schema.Array(Heartbeat))
})
export type Monitor = typeof Monitor.Type

export const MonitorList = Schema.Struct({ monitors: Schema.Array(Monitor), count: Schema.Int })
export type MonitorList = typeof MonitorList.Type

export const HeartbeatList = Schema.Struct({ heartbeats: Schema.Array(Heartbeat), count: Schema.Int })
export type HeartbeatList = typeof HeartbeatList.Type

// --- domain events ---------------------------------------------------------------------

/** A monitor was created, changed or deleted (its entity reloads). */
export const MonitorChangedEvent = eventType(
  "monitor.changed",
  Schema.Struct({
    monitorId: Schema.String,
    orgId: Schema.String,
    change: Schema.Literals(["created", "updated", "deleted"])
  })
)

/** A monitor's status changed (alerts, the live stream, webhooks). */
export const MonitorStatusEvent = eventType(
  "monitor.status",
  Schema.Struct({
    monitorId: Schema.String,
    name: Schema.String,
    status: MonitorStatus,
    previousStatus: MonitorStatus,
    timestamp: Schema.String
  })
)

/** One check's result (the authenticated live stream). */
export const HeartbeatEvent = eventType(
  "heartbeat",
  Schema.Struct({
    monitorId: Schema.String,
    timestamp: Schema.String,
    status: HeartbeatStatus,
    responseTime: Schema.Int,
    statusCode: Schema.optionalKey(Schema.Int),
    error: Schema.optionalKey(Schema.String),
    region: Schema.String,
    attempt: Schema.Int
  })
)
