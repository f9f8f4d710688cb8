import { Clock, Effect } from "effect"
import pkg from "../../package.json" with { type: "json" }
import type { OutboundGuardShape } from "../outbound/OutboundGuard.ts"
import { clientSpans, parentOf } from "../platform/ClientSpans.ts"
import type { AttemptRecord, ClaimedDelivery, QueuedDelivery } from "./Deliveries.ts"
import { LOG_BODY_BYTES, parseUrl, post, type SendAgents, type SendResult } from "./Sender.ts"
import { hubSignature, standardSignature } from "./Signature.ts"
import type { WebhookTarget } from "./Webhooks.ts"

export const USER_AGENT = `Canopy-Hookshot/${pkg.version}`

/** The exact bytes and headers of one attempt (GUIDE §13). */
export const buildRequest = (
  target: Pick<WebhookTarget, "url" | "secret" | "contentType">,
  delivery: Pick<QueuedDelivery, "id" | "event" | "payload">,
  nowMs: number,
  /** `traceparent` when tracing is on. */
  traceHeaders?: Readonly<Record<string, string>>
) => {
  const body = Buffer.from(
    target.contentType === "application/json" ? delivery.payload : `payload=${encodeURIComponent(delivery.payload)}`
  )
  const timestamp = Math.floor(nowMs / 1000)
  const headers: Record<string, string> = {
    "Content-Type": target.contentType,
    "User-Agent": USER_AGENT,
    "X-Service-Event": delivery.event,
    "X-Service-Delivery": delivery.id,
    "webhook-id": delivery.id,
    "webhook-timestamp": String(timestamp),
    ...traceHeaders
  }
  if (target.secret !== null) {
    headers["X-Service-Signature"] = hubSignature(target.secret, body)
    headers["webhook-signature"] = standardSignature(target.secret, delivery.id, timestamp, body)
  }
  return { url: target.url, headers, body }
}

const logText = (bytes: Buffer) => bytes.subarray(0, LOG_BODY_BYTES).toString("utf8")

/**
 * What to log of a claimed attempt sent at `now`, and whether it succeeded. `delays[n]` is the
 * delay after attempt n + 1 (see `Dispatcher`).
 */
export const attemptOutcome = (
  target: WebhookTarget,
  claimed: QueuedDelivery,
  now: number,
  request: ReturnType<typeof buildRequest>,
  result: SendResult,
  delays: ReadonlyArray<number>
): { readonly ok: boolean; readonly record: AttemptRecord } => {
  const number = claimed.attempts
  const ok = result._tag === "Response" && result.statusCode >= 200 && result.statusCode < 300
  const record: AttemptRecord = {
    seq: claimed.seq,
    attempt: number,
    startedAt: new Date(now),
    durationMs: result.durationMs,
    // The body is the payload itself for JSON webhooks: logged by reference when it is whole.
    request: {
      headers: request.headers,
      body: target.contentType === "application/json" && request.body.length <= LOG_BODY_BYTES
        ? null
        : logText(request.body)
    },
    response: result._tag === "Response"
      ? { statusCode: result.statusCode, headers: result.headers, body: logText(result.body) }
      : null,
    error: result._tag === "Failed"
      ? result.error
      : ok
      ? null
      : `receiver answered ${result.statusCode}`,
    status: ok ? "success" : number > target.maxRetries ? "failed" : "pending",
    // The retry after attempt n is due `delays[n - 1]` after its claim.
    retryAt: ok || number > target.maxRetries ? null : new Date(claimed.dueAt + delays[number - 1])
  }
  return { ok, record }
}

/**
 * How long a stopping webhook (shutdown, shard moved) lets its request in flight finish. A
 * receiver answers in milliseconds, so a graceful stop rarely costs a delivery an attempt;
 * one that hangs no longer holds the stop for the cluster's whole termination timeout.
 */
export const STOP_GRACE_MS = 2_000

/** How far a batch got, shared by `sendRun` and the Dispatcher (which settles and resumes). */
export interface RunProgress {
  /** The index of the delivery in flight or last sent; `batch.length` once every one was sent. */
  started: number
}

/**
 * Sends `batch[progress.started…]` one at a time, in order, without a fiber per request: the
 * host is resolved and SSRF-checked once for the run (every delivery of a webhook goes to the
 * same URL), each request is a plain callback, and each success of a webhook that is not
 * failing is pushed to `done`. Stops at the end of the batch, or at the first outcome that is
 * not such a success, which it returns (the Dispatcher logs it at once: it decides retries
 * and the failure streak). Interruption (the webhook stopping) starts no further request and
 * gives the one in flight `STOP_GRACE_MS` to finish: a success then joins `done` (logged by
 * the caller), anything else is cancelled and keeps its claim, so it is retried on schedule.
 * `progress.started` then says which deliveries were never started.
 */
export const sendRun = (
  guard: OutboundGuardShape,
  agents: SendAgents,
  timeoutMs: number,
  target: WebhookTarget,
  batch: ReadonlyArray<ClaimedDelivery>,
  delays: ReadonlyArray<number>,
  progress: RunProgress,
  done: Array<AttemptRecord>
): Effect.Effect<{ readonly ok: boolean; readonly record: AttemptRecord } | undefined> =>
  Effect.gen(function*() {
    const clock = yield* Clock.Clock
    const spans = yield* clientSpans
    const url = parseUrl(target.url)
    const resolved = url instanceof URL ? yield* Effect.result(guard.resolve(url.hostname)) : undefined
    return yield* Effect.callback<{ readonly ok: boolean; readonly record: AttemptRecord } | undefined>((resume) => {
      let cancel: (() => void) | undefined
      // Set once the webhook is stopping: called when the request in flight settles.
      let stopped: (() => void) | undefined
      const next = (): void => {
        if (progress.started >= batch.length) return resume(Effect.succeed(undefined))
        const claimed = batch[progress.started]
        const now = clock.currentTimeMillisUnsafe()
        // The request continues the trace of what queued it (the event's publisher, the API
        // request of a test ping or redelivery); without one, the Dispatcher's span is the parent.
        const span = spans !== undefined && url instanceof URL
          ? spans.start("POST", url, parentOf(claimed.traceparent))
          : undefined
        const request = buildRequest(target, claimed, now, span?.headers)
        const settle = (result: SendResult) => {
          cancel = undefined
          span?.end(result._tag === "Response" ? { statusCode: result.statusCode } : { error: result.error })
          const outcome = attemptOutcome(target, claimed, now, request, result, delays)
          if (stopped !== undefined) {
            // `progress.started` stays on it: the caller logs `done` and gives back only what follows.
            if (outcome.ok && target.failingSince === null) done.push(outcome.record)
            return stopped()
          }
          if (!outcome.ok || target.failingSince !== null) return resume(Effect.succeed(outcome))
          done.push(outcome.record)
          progress.started++
          next()
        }
        if (!(url instanceof URL)) return settle(url)
        if (resolved === undefined || resolved._tag === "Failure") {
          const error = resolved === undefined ? "invalid URL" : resolved.failure.message
          return settle({ _tag: "Failed", error, durationMs: 0 })
        }
        cancel = post(guard, url, resolved.success, request, timeoutMs, agents, settle)
      }
      next()
      return Effect.callback<void>((resumeStop) => {
        if (cancel === undefined) return resumeStop(Effect.void)
        const abandon = setTimeout(() => {
          cancel?.()
          resumeStop(Effect.void)
        }, STOP_GRACE_MS)
        stopped = () => {
          clearTimeout(abandon)
          resumeStop(Effect.void)
        }
      })
    })
  })
