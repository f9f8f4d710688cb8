import { Effect } from "effect"
import * as Tls from "node:tls"
import type { OutboundGuardShape, ResolvedAddress } from "../../outbound/OutboundGuard.ts"
import { type CheckerOptions, CheckFailure } from "./types.ts"

/** What every checker receives from the Checker service. */
export interface CheckContext {
  readonly guard: OutboundGuardShape
  readonly options: CheckerOptions
  /** `ca` for TLS connections, or undefined for Node's defaults. */
  readonly ca: ReadonlyArray<string> | undefined
}

export const makeCheckContext = (guard: OutboundGuardShape, options: CheckerOptions): CheckContext => ({
  guard,
  options,
  ca: options.extraCaCertificates && options.extraCaCertificates.length > 0
    ? [...Tls.rootCertificates, ...options.extraCaCertificates]
    : undefined
})

/** Resolves and SSRF-checks a host; the connection must use the returned addresses. */
export const guardedAddresses = (
  context: CheckContext,
  host: string
): Effect.Effect<ReadonlyArray<ResolvedAddress>, CheckFailure> =>
  context.guard.resolve(host).pipe(
    Effect.mapError((error) => new CheckFailure({ message: error.message }))
  )

export const parseUrl = (url: string, base?: URL): URL | undefined => {
  try {
    return new URL(url, base)
  } catch {
    return undefined
  }
}

const TLS_CODES = new Set([
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_REVOKED",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "HOSTNAME_MISMATCH",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "EPROTO"
])

/** A short human sentence for a socket, TLS or HTTP parser error. */
export const describeNetworkError = (error: unknown): string => {
  // happy-eyeballs connects report every attempt's failure together
  if (
    error instanceof AggregateError && (error as NodeJS.ErrnoException).code === undefined && error.errors.length > 0
  ) {
    return describeNetworkError(error.errors[0])
  }
  const e = error as NodeJS.ErrnoException & { library?: string; reason?: string }
  const code = typeof e?.code === "string" ? e.code : undefined
  const message = typeof e?.message === "string" ? e.message : String(error)
  if (code !== undefined) {
    if (TLS_CODES.has(code) || code.startsWith("ERR_TLS_") || code.startsWith("ERR_SSL_") || e.library !== undefined) {
      return `TLS error: ${message}`
    }
    switch (code) {
      case "ECONNREFUSED":
        return "connection refused"
      case "ECONNRESET":
        return message === "socket hang up" ? "connection closed before a response" : "connection reset by peer"
      case "EHOSTUNREACH":
        return "host unreachable"
      case "ENETUNREACH":
        return "network unreachable"
      case "ETIMEDOUT":
        return "connection timed out"
      case "EPIPE":
        return "connection closed while sending the request"
      case "ENOTFOUND":
      case "EAI_AGAIN":
      case "EAI_FAIL":
        return message.startsWith("DNS lookup failed") ? message : `DNS lookup failed: ${code}`
      case "ERR_OUTBOUND_BLOCKED":
        return message
    }
    if (code.startsWith("HPE_")) return `invalid HTTP response: ${e.reason ?? message}`
    if (code.startsWith("ERR_INVALID_") || code === "ERR_UNESCAPED_CHARACTERS") return `invalid request: ${message}`
    return `${message}${message.includes(code) ? "" : ` (${code})`}`
  }
  return message
}

export const networkFailure = (error: unknown, statusCode?: number) =>
  new CheckFailure(
    statusCode === undefined
      ? { message: describeNetworkError(error) }
      : { message: describeNetworkError(error), statusCode }
  )
