import { PgClient } from "@effect/sql-pg"
import { Clock, Duration, Effect, Layer, Queue } from "effect"
import { restartOnFailure } from "../../../services/platform/RestartOnFailure.ts"
import { Deliveries, WEBHOOKS_CHANNEL } from "../../../services/webhooks/Deliveries.ts"
import { WebhookAlarms } from "./WebhookAlarms.ts"

export interface WebhookWakerOptions {
  /** How often every runner re-arms the webhooks with pending deliveries. Default 10 seconds. */
  readonly sweepInterval?: Duration.Input | undefined
}

/**
 * What wakes webhook entities on this runner:
 * - `LISTEN canopy_webhooks`: deliveries were queued (the NOTIFY commits with them), so the
 *   webhook is drained at once — the hot path from event to delivery;
 * - a sweep every `sweepInterval` (and at start) arming every webhook with pending
 *   deliveries at its earliest due time: after a restart, after shards move here, and as a
 *   safety net for a lost notification. Only webhooks whose shard this runner holds.
 */
export const WebhookWaker = (options?: WebhookWakerOptions) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const pg = yield* PgClient.PgClient
    const deliveries = yield* Deliveries
    const alarms = yield* WebhookAlarms
    const sweepInterval = Duration.fromInputUnsafe(options?.sweepInterval ?? "10 seconds")

    const wakeNow = (webhookId: string) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        if (alarms.hostedHere(webhookId)) alarms.wake(webhookId, now)
      })

    const listen = Effect.scoped(Effect.gen(function*() {
      const notifications = yield* pg.listen(WEBHOOKS_CHANNEL)
      while (true) {
        const batch = yield* Queue.takeAll(notifications)
        for (const notification of batch) yield* wakeNow(notification.payload)
      }
    }))

    const sweep = Effect.gen(function*() {
      for (const { dueAt, webhookId } of yield* deliveries.pendingWebhooks()) {
        if (alarms.hostedHere(webhookId)) alarms.wake(webhookId, dueAt)
      }
    })

    yield* listen.pipe(restartOnFailure("Webhook: LISTEN failed, reconnecting"), Effect.forkScoped)
    yield* Effect.andThen(sweep, Effect.sleep(sweepInterval)).pipe(
      Effect.forever,
      restartOnFailure("Webhook: sweep failed"),
      Effect.forkScoped
    )
  }))
