import { Layer } from "effect"
import { WebhookAlarms } from "./WebhookAlarms.ts"
import { WebhookEntityLayer } from "./WebhookEntity.ts"
import { WebhookFanOutConsumer } from "./WebhookFanOut.ts"
import { WebhookRetentionCron } from "./WebhookRetention.ts"
import { WebhookWaker, type WebhookWakerOptions } from "./WebhookWaker.ts"

/**
 * One entity per webhook, the only sender of its deliveries (GUIDE §13).
 *
 * The durable queue is the delivery log itself: a `pending` row in `webhook_deliveries` is
 * queued work and its `next_attempt_at` the durable timer. Domain events become rows in the
 * transaction of the durable `webhooks` consumer (`WebhookFanOut.ts`), which also NOTIFYs the
 * webhooks concerned. The runner hosting a webhook wakes its entity (`WebhookWaker.ts`,
 * `WebhookAlarms.ts`), whose `Drain` attempts the due deliveries one at a time — earliest due
 * first, new ones in event order — and answers when the next is due; the runner arms an alarm
 * for then (Effect `Clock`, so `TestClock` drives retries in tests).
 *
 * Why not persisted cluster messages with `DeliverAt`: every delivery must be logged with its
 * attempts anyway; a table that is both log and queue writes each delivery once, where a
 * persisted message would add a second durable copy (message + reply rows in cluster storage)
 * per attempt, and listing, redelivery and retention would still need the table.
 *
 * Exactly once per attempt: an attempt is claimed by compare-and-swap on `attempts` before
 * it is sent, and the claim moves `next_attempt_at` to when the next retry is due. A runner
 * that dies mid-attempt leaves that row; the new host's sweep (or this runner's, after a
 * restart) arms it, and the next attempt happens on schedule. A receiver may therefore see a
 * delivery again after a crash (same `X-Service-Delivery` / `webhook-id`, so it can dedupe),
 * but never the same attempt twice.
 *
 * Retention: a cluster cron prunes the log daily by plan.
 */
export const WebhookDeliveryLive = (options?: WebhookWakerOptions) =>
  Layer.mergeAll(WebhookEntityLayer, WebhookWaker(options), WebhookFanOutConsumer, WebhookRetentionCron).pipe(
    Layer.provideMerge(WebhookAlarms.layer())
  )
