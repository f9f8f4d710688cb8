import { Clock, Context, Effect, Layer, Option } from "effect"
import { Mailer } from "../mail/Mailer.ts"
import { OutboundGuard } from "../outbound/OutboundGuard.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { AttemptBatcher } from "./AttemptBatcher.ts"
import { type RunProgress, sendRun } from "./AttemptRun.ts"
import { type AttemptRecord, type ClaimedDelivery, Deliveries } from "./Deliveries.ts"
import { DISABLE_AFTER_MS, retryDelayMs } from "./Limits.ts"
import { makeSendAgents } from "./Sender.ts"
import { Webhooks, type WebhookTarget } from "./Webhooks.ts"

/** The spec's connection timeout. */
export const DELIVERY_TIMEOUT_MS = 30_000

/**
 * Deliveries of one webhook claimed together: one claim (and one log statement) per batch
 * instead of per delivery; they are still sent one at a time, in order. The most a crash can
 * leave claimed but unsent (those then go at their retry time, one attempt used).
 */
export const PREFETCH = 20

/** How long a stopping webhook tries to log what it sent and give back what it did not. */
const STOP_WAIT = "5 seconds"

/**
 * The delivery logic of one webhook, run by its entity (which owns the timing): attempts
 * the due deliveries of its queue one at a time, earliest due first (new deliveries in event
 * order), and says when the next one is due.
 *
 * Each attempt is claimed before it is sent (`AttemptBatcher` commits `attempts + 1` and
 * the claim's time, which makes the retry after it due at its scheduled time), so a runner
 * that dies while sending neither repeats that attempt nor loses the retry: the next attempt
 * happens at its scheduled time, on whichever runner then hosts the webhook. Up to
 * `PREFETCH` deliveries are claimed at once and sent one after the other; their successes
 * are logged with the next claim. A crash can therefore leave up to `PREFETCH` deliveries
 * claimed but unsent or sent but unlogged: each goes out again at its retry time, as the
 * next attempt (same delivery id) — never the same attempt twice, and no retry lost.
 */
export class Dispatcher extends Context.Service<Dispatcher, {
  /** Attempts every due delivery; the time (ms) the next one is due, or none when the queue is empty. */
  deliverDue(webhookId: string): Effect.Effect<Option.Option<number>>
}>()("canopy/webhooks/Dispatcher") {
  static readonly layer = Layer.effect(
    Dispatcher,
    Effect.gen(function*() {
      const webhooks = yield* Webhooks
      const deliveries = yield* Deliveries
      const batcher = yield* AttemptBatcher
      const guard = yield* OutboundGuard
      const mailer = yield* Mailer
      const config = yield* AppConfig
      const timeoutMs = config.webhookTimeoutMs ?? DELIVERY_TIMEOUT_MS
      const agents = yield* Effect.acquireRelease(
        Effect.sync(makeSendAgents),
        (agents) =>
          Effect.sync(() => {
            agents.http.destroy()
            agents.https.destroy()
          })
      )

      const tellOwners = (target: WebhookTarget, owners: ReadonlyArray<string>) =>
        owners.length === 0 ? Effect.void : mailer.send({
          to: owners,
          subject: "A Canopy webhook was disabled",
          text: `Every delivery to ${target.url} (webhook ${target.id}) has failed for 5 days, so Canopy ` +
            "has disabled it. Fix the receiver, then re-enable the webhook (PATCH isActive: true) and " +
            "redeliver what it missed from its delivery log.\n\n" + config.baseUrl
        }).pipe(
          Effect.catchCause((cause) =>
            Effect.logWarning("Webhook: disable notice not sent", cause).pipe(
              Effect.annotateLogs({ webhookId: target.id })
            )
          )
        )

      /**
       * Delays (ms) after each attempt: `delays[n]` follows attempt n + 1. The last entry
       * follows the last attempt and only matters if the runner dies sending it: then the
       * delivery is failed at that time.
       */
      const delaysOf = (target: WebhookTarget) => [
        ...Array.from({ length: target.maxRetries }, (_, n) => retryDelayMs(n + 1, target.retryIntervalSeconds)),
        timeoutMs + 60_000
      ]

      /** Logs an attempt that failed or ended a failure streak; the streak after it, or "disabled". */
      const settle = Effect.fnUntraced(function*(target: WebhookTarget, ok: boolean, record: AttemptRecord) {
        yield* deliveries.recordAll([record])
        const finishedAt = yield* Clock.currentTimeMillis
        const disabled = yield* webhooks.noteOutcome(target.id, {
          ok,
          at: new Date(finishedAt),
          disableAfterMs: DISABLE_AFTER_MS
        })
        if (Option.isNone(disabled)) return ok ? null : target.failingSince ?? new Date(finishedAt)
        yield* deliveries.failPending(target.id)
        yield* tellOwners(target, disabled.value)
        return "disabled" as const
      })

      /**
       * Sends a claimed batch one delivery at a time, in order. Successes of a webhook that
       * is not failing are only collected (logged with the next claim); anything else is
       * settled at once, after the successes before it. Returns the successes still to log,
       * or "disabled". If the webhook stops meanwhile, the successes are logged and the
       * claims not yet started given back (the one in flight keeps its claim: its outcome is
       * unknown, so it is retried on schedule).
       */
      const sendBatch = (target: WebhookTarget, batch: ReadonlyArray<ClaimedDelivery>) => {
        const done: Array<AttemptRecord> = []
        const progress: RunProgress = { started: 0 }
        const delays = delaysOf(target)
        return Effect.gen(function*() {
          while (progress.started < batch.length) {
            const stopped = yield* sendRun(guard, agents, timeoutMs, target, batch, delays, progress, done)
            if (stopped === undefined) break
            if (done.length > 0) yield* deliveries.recordAll(done.splice(0))
            const failingSince = yield* settle(target, stopped.ok, stopped.record)
            if (failingSince === "disabled") return "disabled" as const
            target = { ...target, failingSince }
            progress.started++
          }
          return { target, done }
        }).pipe(
          Effect.onInterrupt(() =>
            Effect.all([
              done.length === 0 ? Effect.void : deliveries.recordAll(done),
              deliveries.release(batch.slice(progress.started + 1))
            ], { discard: true }).pipe(Effect.timeoutOption(STOP_WAIT), Effect.ignore)
          )
        )
      }

      const deliverDue = Effect.fn("Dispatcher.deliverDue")(function*(webhookId: string) {
        const loaded = yield* webhooks.loadTarget(webhookId)
        if (Option.isNone(loaded)) return Option.none<number>()
        let target = loaded.value
        if (!target.isActive) {
          yield* deliveries.failPending(webhookId)
          return Option.none<number>()
        }
        const delays = delaysOf(target)
        // `claimedAt`: the time the last claim looked for due deliveries.
        let claimedAt = yield* Clock.currentTimeMillis
        // Every claim goes through the batcher: webhooks woken together by a fan-out claim in
        // one statement (one commit) instead of one each.
        let batch = yield* batcher.recordAndClaim([], webhookId, claimedAt, delays, PREFETCH)
        while (true) {
          if (batch.length > 0) {
            const sent = yield* sendBatch(target, batch)
            if (sent === "disabled") return Option.none<number>()
            target = sent.target
            claimedAt = yield* Clock.currentTimeMillis
            // The hot path: log the batch's successes and claim the next batch, in one
            // statement shared with other webhooks.
            batch = yield* batcher.recordAndClaim(sent.done, webhookId, claimedAt, delays, PREFETCH)
            continue
          }
          // Nothing claimable at `claimedAt`: the queue is empty, its head not due yet, out of
          // attempts, or queued after the claim looked.
          const head = yield* deliveries.head(webhookId, claimedAt, delays)
          if (Option.isNone(head)) return Option.none<number>()
          if (head.value.dueAt > claimedAt) return Option.some(head.value.dueAt)
          // A runner died during the last attempt: nothing is left to try.
          if (head.value.attempts >= delays.length) yield* deliveries.fail(head.value.seq)
          claimedAt = yield* Clock.currentTimeMillis
          batch = yield* batcher.recordAndClaim([], webhookId, claimedAt, delays, PREFETCH)
        }
      })

      return Dispatcher.of({ deliverDue })
    })
  ).pipe(Layer.provide(AttemptBatcher.layer))
}
