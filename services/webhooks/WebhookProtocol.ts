import { Schema } from "effect"
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"

/**
 * The webhook entity's protocol: one entity per webhook, the single sender of its
 * deliveries. How timing works is told in `WebhookDelivery.ts`; the handler is in
 * `WebhookEntity.ts`.
 */

/**
 * Attempt every due delivery, one at a time; answers when the next one is due (ms), or null.
 * Interrupted as soon as its entity stops (shutdown, shard moved) rather than after the
 * cluster's termination timeout: it then stops starting requests, lets the one in flight
 * finish briefly and gives back the rest of its claims (`sendRun`, `Dispatcher`).
 */
export const Drain = Rpc.make("Drain", { success: Schema.NullOr(Schema.Number) }).annotate(
  ClusterSchema.InterruptOnTermination,
  true
)

export const Webhook = Entity.make("Webhook", [Drain])
