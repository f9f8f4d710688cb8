import * as Http from "node:http"
import * as Https from "node:https"
import { describeNetworkError } from "../monitors/checks/network.ts"
import type { OutboundGuardShape, ResolvedAddress } from "../outbound/OutboundGuard.ts"

/** Request and response bodies kept in the delivery log. */
export const LOG_BODY_BYTES = 64 * 1024

export interface OutgoingRequest {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: Buffer
}

/** What came back: a status (any), or why nothing usable did. */
export type SendResult =
  | {
    readonly _tag: "Response"
    readonly statusCode: number
    readonly headers: Readonly<Record<string, string>>
    /** The first `LOG_BODY_BYTES` of the body. */
    readonly body: Buffer
    readonly durationMs: number
  }
  | { readonly _tag: "Failed"; readonly error: string; readonly durationMs: number }

/**
 * Connections kept open between deliveries (one agent pair per runner): a webhook's next
 * delivery reuses the socket of its last one instead of a new TCP (and TLS) handshake. The
 * SSRF guard checked the address when the socket was opened; a reused socket stays pinned
 * to it. Idle sockets close when the receiver's `Keep-Alive: timeout` says so.
 */
export interface SendAgents {
  readonly http: Http.Agent
  readonly https: Https.Agent
}

export const makeSendAgents = (): SendAgents => {
  const options = { keepAlive: true, keepAliveMsecs: 1_000, maxFreeSockets: 1_024, scheduling: "lifo" } as const
  return { http: new Http.Agent(options), https: new Https.Agent(options) }
}

const flatHeaders = (headers: Http.IncomingHttpHeaders): Record<string, string> => {
  const flat: Record<string, string> = {}
  for (const key in headers) {
    const value = headers[key]
    if (value !== undefined) flat[key] = Array.isArray(value) ? value.join(", ") : value
  }
  return flat
}

/**
 * Posts one webhook request to already checked addresses (see `OutboundGuard.resolve`): the
 * connection is pinned to them (no second DNS lookup, no redirects followed). The whole
 * exchange — connect, TLS, response headers and the logged part of the body — must finish
 * within `timeoutMs` (a real timer). Calls `done` exactly once, unless cancelled first with
 * the returned function; every problem is a `Failed` result with a short sentence. A request
 * that fails on a reused keep-alive socket before any answer (the receiver closed it
 * meanwhile) is sent once more on a new connection, as Node's documentation advises.
 * Plain callbacks, no fiber: the delivery hot path sends a claimed batch with it.
 */
export const post = (
  guard: OutboundGuardShape,
  url: URL,
  addresses: ReadonlyArray<ResolvedAddress>,
  request: OutgoingRequest,
  timeoutMs: number,
  agents: SendAgents | undefined,
  done: (result: SendResult) => void
): () => void => {
  const started = performance.now()
  const elapsed = () => Math.round(performance.now() - started)
  let settled = false
  let outgoing: Http.ClientRequest | undefined
  // `keep`: the response was read to its end, so its socket can serve the next request.
  const finish = (result: SendResult, keep = false) => {
    if (settled) return
    settled = true
    clearTimeout(timer)
    if (!keep) outgoing?.destroy()
    done(result)
  }
  const failed = (error: unknown) =>
    finish({ _tag: "Failed", error: describeNetworkError(error), durationMs: elapsed() })
  const timer = setTimeout(
    () => finish({ _tag: "Failed", error: `timed out after ${timeoutMs} ms`, durationMs: elapsed() }),
    timeoutMs
  )
  const isHttps = url.protocol === "https:"
  const options: Https.RequestOptions = {
    method: "POST",
    headers: { ...request.headers, "Content-Length": String(request.body.length) },
    lookup: guard.pinnedLookup(addresses),
    agent: agents === undefined ? false : isHttps ? agents.https : agents.http
  }
  const start = (allowResend: boolean) => {
    let answered = false
    try {
      outgoing = (isHttps ? Https : Http).request(url, options, (response) => {
        answered = true
        const chunks: Array<Buffer> = []
        let size = 0
        const end = (keep = false) =>
          finish({
            _tag: "Response",
            statusCode: response.statusCode ?? 0,
            headers: flatHeaders(response.headers),
            body: chunks.length === 1 ? chunks[0] : Buffer.concat(chunks),
            durationMs: elapsed()
          }, keep)
        response.on("data", (chunk: Buffer) => {
          const room = LOG_BODY_BYTES - size
          chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk)
          size += Math.min(chunk.length, room)
          // The status is what counts: stop reading once the logged part is in.
          if (size >= LOG_BODY_BYTES) end()
        })
        response.on("end", () => end(true))
        response.on("error", failed)
        response.on("aborted", () => end())
      })
    } catch (error) {
      failed(error)
      return
    }
    const sent = outgoing
    sent.on("error", (error) => {
      if (allowResend && !answered && !settled && sent.reusedSocket) start(false)
      else failed(error)
    })
    sent.end(request.body)
  }
  start(true)
  return () => {
    settled = true
    clearTimeout(timer)
    outgoing?.destroy()
  }
}

/** The URL of a request, or the `Failed` result a malformed one gets. */
export const parseUrl = (raw: string): URL | SendResult => {
  try {
    return new URL(raw)
  } catch {
    return { _tag: "Failed", error: `invalid URL: ${raw}`, durationMs: 0 }
  }
}
