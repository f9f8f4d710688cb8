import { Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"

/**
 * The webhook entity's protocol: one entity per webhook, the single sender of its
 * deliveries. How timing works is told in `WebhookDelivery.ts`; the handler is in
 * `WebhookEntity.ts`.
 */

/** Attempt every due delivery, one at a time; answers when the next one is due (ms), or null. */
export const Drain = Rpc.make("Drain", { success: Schema.NullOr(Schema.Number) })

export const Webhook = Entity.make("Webhook", [Drain])
