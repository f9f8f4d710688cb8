import { Effect } from "effect"
import * as Http from "node:http"
import * as Https from "node:https"
import type { ResolvedAddress } from "../../outbound/OutboundGuard.ts"
import { withClientSpan } from "../../platform/ClientSpans.ts"
import { type CheckContext, guardedAddresses, networkFailure, parseUrl } from "./network.ts"
import { CheckFailure, type CheckSuccess, type CheckTarget, DEFAULT_USER_AGENT } from "./types.ts"

export const MAX_REDIRECTS = 5

export interface HttpExchange {
  readonly url: URL
  readonly statusCode: number
  readonly headers: Http.IncomingHttpHeaders
  readonly body: Buffer
}

export interface BodyPolicy {
  /** Bytes of the final response body to keep. */
  readonly maxBytes: number
  /** Over the limit: fail ("response too large"), or stop reading and keep what arrived. */
  readonly onOverflow: "fail" | "truncate"
}

const REDIRECT_CODES = new Set([301, 302, 303, 307, 308])

const hasHeader = (headers: Readonly<Record<string, string>>, name: string) =>
  Object.keys(headers).some((key) => key.toLowerCase() === name)

const withoutHeaders = (headers: Readonly<Record<string, string>>, names: ReadonlyArray<string>) =>
  Object.fromEntries(Object.entries(headers).filter(([key]) => !names.includes(key.toLowerCase())))

const looksLikeJson = (body: string) => {
  try {
    JSON.parse(body)
    return true
  } catch {
    return false
  }
}

const formatBytes = (n: number) => n >= 1024 * 1024 ? `${n / (1024 * 1024)} MiB` : `${n} bytes`

interface HopRequest {
  readonly url: URL
  readonly method: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | undefined
  readonly addresses: ReadonlyArray<ResolvedAddress>
  /** The response is a redirect we will follow: do not read its body. */
  readonly follows: (statusCode: number, headers: Http.IncomingHttpHeaders) => boolean
  readonly bodyPolicy: BodyPolicy
}

/** One HTTP exchange over a connection pinned to the checked addresses, traced as a client span. */
const exchange = (context: CheckContext, hop: HopRequest): Effect.Effect<HttpExchange, CheckFailure> =>
  withClientSpan(
    hop.method,
    hop.url,
    (response: HttpExchange) => response.statusCode,
    (traceHeaders) => exchangeOnce(context, { ...hop, headers: { ...hop.headers, ...traceHeaders } })
  )

const exchangeOnce = (context: CheckContext, hop: HopRequest) =>
  Effect.callback<HttpExchange, CheckFailure>((resume) => {
    let settled = false
    let request: Http.ClientRequest | undefined
    const finish = (effect: Effect.Effect<HttpExchange, CheckFailure>) => {
      if (settled) return
      settled = true
      // never leave the socket open, whatever happened
      request?.destroy()
      resume(effect)
    }
    const isHttps = hop.url.protocol === "https:"
    const options: Https.RequestOptions = {
      method: hop.method,
      headers: hop.headers,
      lookup: context.guard.pinnedLookup(hop.addresses),
      agent: false,
      ...(isHttps && context.ca !== undefined ? { ca: [...context.ca] } : {})
    }
    try {
      request = (isHttps ? Https : Http).request(hop.url, options, (response) => {
        const statusCode = response.statusCode ?? 0
        const done = (body: Buffer) =>
          finish(Effect.succeed({ url: hop.url, statusCode, headers: response.headers, body }))
        if (hop.follows(statusCode, response.headers)) return done(Buffer.alloc(0))
        const chunks: Array<Buffer> = []
        let size = 0
        response.on("data", (chunk: Buffer) => {
          if (settled) return
          const room = hop.bodyPolicy.maxBytes - size
          if (chunk.length > room) {
            if (hop.bodyPolicy.onOverflow === "fail") {
              finish(Effect.fail(
                new CheckFailure({
                  message: `response too large (over ${formatBytes(hop.bodyPolicy.maxBytes)})`,
                  statusCode
                })
              ))
            } else {
              chunks.push(chunk.subarray(0, room))
              done(Buffer.concat(chunks))
            }
            return
          }
          chunks.push(chunk)
          size += chunk.length
        })
        response.on("end", () => done(Buffer.concat(chunks)))
        response.on("error", (error) => finish(Effect.fail(networkFailure(error, statusCode))))
        response.on(
          "aborted",
          () =>
            finish(Effect.fail(new CheckFailure({ message: "connection closed during the response body", statusCode })))
        )
      })
    } catch (error) {
      finish(Effect.fail(networkFailure(error)))
      return
    }
    const sent = request
    sent.on("error", (error) => finish(Effect.fail(networkFailure(error))))
    sent.end(hop.body)
    return Effect.sync(() => {
      settled = true
      sent.destroy()
    })
  })

/**
 * Sends the target's request and follows up to 5 redirects; every hop is
 * resolved and SSRF-checked by the guard, and its connection pinned to the
 * checked addresses. A redirect whose status is the expected code is not followed.
 */
export const fetchWithRedirects = (
  context: CheckContext,
  target: CheckTarget,
  bodyPolicy: BodyPolicy
): Effect.Effect<HttpExchange, CheckFailure> =>
  Effect.gen(function*() {
    let url = parseUrl(target.url)
    if (url === undefined) return yield* new CheckFailure({ message: `invalid URL: ${target.url}` })
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      return yield* new CheckFailure({ message: `unsupported URL scheme ${url.protocol} (expected http: or https:)` })
    }
    let method = (target.method || "GET").toUpperCase()
    let body = method === "GET" || method === "HEAD" ? undefined : target.body
    let headers: Record<string, string> = { ...target.headers }
    if (!hasHeader(headers, "user-agent")) headers["User-Agent"] = context.options.userAgent ?? DEFAULT_USER_AGENT
    if (!hasHeader(headers, "accept")) headers["Accept"] = "*/*"
    if (body !== undefined) {
      if (!hasHeader(headers, "content-type")) {
        headers["Content-Type"] = looksLikeJson(body) ? "application/json" : "text/plain; charset=utf-8"
      }
      headers = { ...withoutHeaders(headers, ["content-length"]), "Content-Length": String(Buffer.byteLength(body)) }
    }
    const follows = (statusCode: number, responseHeaders: Http.IncomingHttpHeaders) =>
      REDIRECT_CODES.has(statusCode) && statusCode !== target.expectedCode &&
      typeof responseHeaders.location === "string" && responseHeaders.location !== ""

    for (let redirects = 0;; redirects++) {
      const addresses = yield* guardedAddresses(context, url.hostname)
      const response = yield* exchange(context, { url, method, headers, body, addresses, follows, bodyPolicy })
      if (!follows(response.statusCode, response.headers)) return response
      if (redirects >= MAX_REDIRECTS) {
        return yield* new CheckFailure({ message: "too many redirects", statusCode: response.statusCode })
      }
      const next = parseUrl(response.headers.location!, url)
      if (next === undefined || (next.protocol !== "http:" && next.protocol !== "https:")) {
        return yield* new CheckFailure({
          message: `redirect to unsupported location ${response.headers.location}`,
          statusCode: response.statusCode
        })
      }
      if (
        response.statusCode === 303 ||
        ((response.statusCode === 301 || response.statusCode === 302) && method === "POST")
      ) {
        if (method !== "HEAD") method = "GET"
        body = undefined
        headers = withoutHeaders(headers, ["content-type", "content-length"])
      }
      if (next.origin !== url.origin) {
        headers = withoutHeaders(headers, ["authorization", "cookie", "proxy-authorization"])
      }
      url = next
    }
  })

export const expectStatus = (target: CheckTarget, statusCode: number): Effect.Effect<void, CheckFailure> =>
  statusCode === target.expectedCode
    ? Effect.void
    : Effect.fail(
      new CheckFailure({ message: `expected status ${target.expectedCode}, got ${statusCode}`, statusCode })
    )

/** `http`: the final response's status must equal `expectedCode`. */
export const httpCheck = (context: CheckContext, target: CheckTarget): Effect.Effect<CheckSuccess, CheckFailure> =>
  Effect.gen(function*() {
    const response = yield* fetchWithRedirects(context, target, { maxBytes: 1024 * 1024, onOverflow: "truncate" })
    yield* expectStatus(target, response.statusCode)
    return { statusCode: response.statusCode }
  })
