import { Effect, Option } from "effect"
import { Entity } from "effect/cluster"
import { Dispatcher } from "../../../services/webhooks/Dispatcher.ts"
import { Webhook } from "../../../services/webhooks/WebhookProtocol.ts"

export const WebhookEntityLayer = Webhook.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const dispatcher = yield* Dispatcher
    const webhookId = address.entityId
    return Webhook.of({
      Drain: () => Effect.map(dispatcher.deliverDue(webhookId), Option.getOrNull)
    })
  }),
  { maxIdleTime: "30 seconds" }
)
