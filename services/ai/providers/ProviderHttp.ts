import { NodeHttpClient } from "@effect/platform-node"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import { AiError } from "effect/ai"
import { HttpClient, HttpClientRequest } from "effect/http"
import { OutboundGuard } from "../../outbound/OutboundGuard.ts"

/**
 * The HTTP side every provider shares (GUIDE §15): requests through the SSRF guard (the
 * base URL's host is checked, and the connection's own lookup checks again, so a
 * rebinding name cannot slip through), 429, 5xx and failed connections retried three times with backoff that
 * honours `Retry-After`, 120 s per attempt, and failures as `AiError`s whose messages are
 * sentences without the key, the headers or the provider's body (which may echo the key).
 */

export const ATTEMPT_TIMEOUT = Duration.seconds(120)
export const MAX_RETRIES = 3
/** The longest `Retry-After` honoured; a provider asking for more fails the review instead. */
const MAX_RETRY_AFTER_MS = 60_000

/** The backoff base between retries without `Retry-After` (a seam for tests). */
export const RetryBaseDelay = Context.Reference<Duration.Duration>("canopy/ai/RetryBaseDelay", {
  defaultValue: () => Duration.millis(500)
})

/** The provider's HTTP client: Node's, with connections resolved through the guard. */
export class ProviderHttpClient extends Context.Service<ProviderHttpClient, HttpClient.HttpClient>()(
  "canopy/ai/ProviderHttpClient"
) {
  static readonly layer = Layer.effect(
    ProviderHttpClient,
    Effect.gen(function*() {
      const guard = yield* OutboundGuard
      const agent = yield* NodeHttpClient.makeAgent({ keepAlive: true, lookup: guard.lookup })
      return yield* NodeHttpClient.makeNodeHttp.pipe(Effect.provideService(NodeHttpClient.HttpAgent, agent))
    })
  )
}

export interface ProviderCall {
  readonly provider: string
  readonly method: string
  readonly url: string
  readonly headers: Record<string, string | Redacted.Redacted<string>>
  readonly body: unknown
}

const fail = (call: ProviderCall, reason: AiError.AiErrorReason) =>
  Effect.fail(AiError.make({ module: call.provider, method: call.method, reason }))

/** `Retry-After` as milliseconds: seconds or an HTTP date. */
export const retryAfterMs = (value: string | undefined, now: number): number | undefined => {
  if (value === undefined || value.trim() === "") return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/** Whether an error body says the account is out of quota (not a passing rate limit). */
const quotaBody = (text: string) => /insufficient_quota|quota.{0,20}exceeded|billing/i.test(text)

type Attempt =
  | { readonly _tag: "Ok"; readonly json: unknown }
  | { readonly _tag: "Retry"; readonly delayMs: number | undefined; readonly reason: AiError.AiErrorReason }

/**
 * One JSON POST with retries; answers the decoded JSON body of a 2xx. `classify` lets a
 * provider turn its own error bodies (e.g. Google's 400 for a bad key) into a reason first.
 */
export const postJson = (
  call: ProviderCall,
  classify?: (status: number, body: string) => AiError.AiErrorReason | undefined
) =>
  Effect.gen(function*() {
    const client = yield* ProviderHttpClient
    const guard = yield* OutboundGuard
    const base = yield* RetryBaseDelay
    let url: URL
    try {
      url = new URL(call.url)
    } catch {
      return yield* fail(call, new AiError.InvalidRequestError({ description: "The provider URL is not valid" }))
    }
    const blocked = yield* guard.resolve(url.hostname).pipe(
      Effect.as(undefined),
      Effect.catch((error) => Effect.succeed(error.message))
    )
    if (blocked !== undefined) {
      return yield* fail(
        call,
        new AiError.InvalidRequestError({ description: `The provider address is not allowed: ${blocked}` })
      )
    }
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" }
    for (const [name, value] of Object.entries(call.headers)) {
      headers[name] = Redacted.isRedacted(value) ? Redacted.value(value) : value
    }
    const request = HttpClientRequest.post(url).pipe(
      HttpClientRequest.setHeaders(headers),
      HttpClientRequest.bodyJsonUnsafe(call.body)
    )

    const attempt: Effect.Effect<Attempt, AiError.AiError> = Effect.gen(function*() {
      const sent = yield* client.execute(request).pipe(Effect.result)
      // A connection that failed (or a kept-alive one the server had closed) is retried.
      if (sent._tag === "Failure") {
        const reason = new AiError.NetworkError({
          reason: "TransportError",
          method: "POST",
          url: `${url.origin}${url.pathname}`,
          description: `The provider could not be reached (${sent.failure.reason._tag})`
        })
        return { _tag: "Retry", delayMs: undefined, reason } as const
      }
      const response = sent.success
      const text = yield* Effect.orElseSucceed(response.text, () => "")
      const status = response.status
      if (status >= 200 && status < 300) {
        try {
          return { _tag: "Ok", json: JSON.parse(text) } as const
        } catch {
          return yield* fail(
            call,
            new AiError.InvalidOutputError({ description: "The provider answered with a body that is not JSON" })
          )
        }
      }
      const own = classify?.(status, text)
      if (own !== undefined) return yield* fail(call, own)
      if (status === 401 || status === 403) {
        return yield* fail(
          call,
          new AiError.AuthenticationError({
            kind: status === 401 ? "InvalidKey" : "InsufficientPermissions",
            description: `HTTP ${status}`
          })
        )
      }
      if (status === 429 && quotaBody(text)) return yield* fail(call, new AiError.QuotaExhaustedError({}))
      if (status === 429 || status >= 500) {
        const delayMs = retryAfterMs(response.headers["retry-after"], Date.now())
        const reason = status === 429
          ? new AiError.RateLimitError({})
          : new AiError.InternalProviderError({ description: `HTTP ${status}` })
        return { _tag: "Retry", delayMs, reason } as const
      }
      return yield* fail(call, new AiError.InvalidRequestError({ description: `HTTP ${status}` }))
    }).pipe(
      Effect.timeoutOrElse({
        duration: ATTEMPT_TIMEOUT,
        orElse: () =>
          fail(
            call,
            new AiError.NetworkError({
              reason: "TransportError",
              method: "POST",
              url: `${url.origin}${url.pathname}`,
              description: `The provider did not answer within ${Duration.format(ATTEMPT_TIMEOUT)}`
            })
          )
      })
    )

    for (let retry = 0;; retry++) {
      const outcome = yield* attempt
      if (outcome._tag === "Ok") return outcome.json
      if (retry >= MAX_RETRIES) return yield* fail(call, outcome.reason)
      const delay = outcome.delayMs ?? Duration.toMillis(base) * 2 ** retry
      if (delay > MAX_RETRY_AFTER_MS) return yield* fail(call, outcome.reason)
      yield* Effect.sleep(Duration.millis(delay))
    }
  })
