import { Clock, Cron, Effect } from "effect"
import { ClusterCron } from "effect/cluster"
import { Deliveries } from "../../../services/webhooks/Deliveries.ts"
import { deliveryRetentionDays } from "../../../services/webhooks/Limits.ts"

/** Daily pruning of the webhook delivery log by plan (7 / 30 / 90 days), on one runner (03:27 UTC). */
export const WebhookRetentionCron = ClusterCron.make({
  name: "webhooks/PruneDeliveries",
  cron: Cron.parseUnsafe("27 3 * * *"),
  execute: Effect.gen(function*() {
    const deliveries = yield* Deliveries
    const deleted = yield* deliveries.prune(deliveryRetentionDays, yield* Clock.currentTimeMillis)
    yield* Effect.logInfo(`Pruned ${deleted} webhook deliveries past their plan's retention`)
  })
})
