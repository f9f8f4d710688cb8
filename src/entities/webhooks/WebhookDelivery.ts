import { Layer } from "effect"
import { WebhookAlarms } from "./WebhookAlarms.ts"
import { WebhookEntityLayer } from "./WebhookEntity.ts"
import { WebhookFanOutConsumer } from "./WebhookFanOut.ts"
import { WebhookRetentionCron } from "./WebhookRetentionCron.ts"
import { WebhookWaker, type WebhookWakerOptions } from "./WebhookWaker.ts"

/**
 * One entity per webhook, the only sender of its deliveries (GUIDE §13).
 *
 * The durable queue is the delivery log itself: a `pending` row in `webhook_deliveries` is
 * queued work and its `next_attempt_at` the durable timer (`webhook_queue` indexes the pending
 * rows in claim order, so logging an outcome is a HOT update of the log). Domain events become rows in the
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
 * Exactly once per attempt: attempts are claimed (`attempts + 1`, `claimed_at`) before they
 * are sent, up to 20 deliveries of a webhook at once, and a claimed attempt's retry is due at
 * `claimed_at` + its delay. A runner that dies leaves its claims; the new host's sweep (or
 * this runner's, after a restart) arms the webhook, and each claimed delivery — the one in
 * flight, any sent but not yet logged, any not yet sent — gets its next attempt on schedule.
 * A receiver may therefore see a delivery again after a crash (same `X-Service-Delivery` /
 * `webhook-id`, so it can dedupe), but never the same attempt twice. A webhook stopped
 * gracefully (shutdown, shard moved) logs what it sent and gives back the claims it never
 * started, so only a crash costs those deliveries an attempt and a retry interval.
 *
 * Retention: a cluster cron prunes the log daily by plan.
 */
export const WebhookDeliveryLive = (options?: WebhookWakerOptions) =>
  Layer.mergeAll(WebhookEntityLayer, WebhookWaker(options), WebhookFanOutConsumer, WebhookRetentionCron).pipe(
    Layer.provideMerge(WebhookAlarms.layer())
  )
