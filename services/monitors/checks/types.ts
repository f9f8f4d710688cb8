import { Schema } from "effect"

export type CheckType = "http" | "api" | "tcp" | "dns" | "websocket"

export type AssertionOp = "eq" | "neq" | "contains" | "exists" | "lt" | "gt"

export interface CheckAssertion {
  /** JSONPath subset: `$`, `.key`, `[0]`, `["key"]` (e.g. `$.items[0].id`). */
  readonly path: string
  readonly op: AssertionOp
  readonly value?: unknown
}

export type DnsRecordType = "A" | "AAAA" | "CNAME" | "MX" | "TXT" | "NS"

/** One check to run: the monitor fields a checker needs. */
export interface CheckTarget {
  readonly checkType: CheckType
  readonly url: string
  readonly method: string
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string | undefined
  readonly expectedCode: number
  readonly timeoutSeconds: number
  readonly assertions?: ReadonlyArray<CheckAssertion> | undefined
  readonly dnsRecordType?: DnsRecordType | undefined
  readonly expectedValue?: string | undefined
}

/**
 * The outcome of one check. `degraded` is not decided here: the caller compares
 * `responseTimeMs` with the monitor's `degradedThresholdMs`.
 */
export interface CheckResult {
  readonly status: "up" | "down"
  /** Real elapsed time of the whole check (all redirect hops), in milliseconds. */
  readonly responseTimeMs: number
  readonly statusCode?: number
  readonly error?: string
}

export interface CheckerOptions {
  /** DNS servers for `dns` checks (`"127.0.0.1:5353"`, `"[::1]:53"`); default: the system's. */
  readonly dnsServers?: ReadonlyArray<string> | undefined
  /** PEM CA certificates trusted in addition to Node's bundled roots (internal CAs). */
  readonly extraCaCertificates?: ReadonlyArray<string> | undefined
  /** Default `User-Agent` when the monitor sets none. */
  readonly userAgent?: string | undefined
}

export const DEFAULT_USER_AGENT = "Canopy-Monitor/0.1 (+uptime check)"

/** Why a check is down; every checker fails only with this. */
export class CheckFailure extends Schema.TaggedError<CheckFailure>()("CheckFailure", {
  message: Schema.String,
  statusCode: Schema.optional(Schema.Number)
}) {}

/** What a successful check reports besides its time. */
export interface CheckSuccess {
  readonly statusCode?: number | undefined
}
