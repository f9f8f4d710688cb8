import { Effect, Layer } from "effect"
import { Events } from "../../../services/events/Events.ts"
import { FanOut } from "../../../services/webhooks/FanOut.ts"
import { sourceEventTypes } from "../../../services/webhooks/Payloads.ts"

/**
 * The durable `webhooks` consumer of domain events: each batch of events (up to 500) is
 * turned into one queued delivery per subscribed webhook, in two statements, in the
 * consumer's own transaction, so an event is fanned out exactly once whatever runner or
 * restart (a failed batch rolls back whole and is retried). Starts at the events committed
 * after it first ran (no replay of history into new webhooks).
 */
export const WebhookFanOutConsumer = Layer.effectDiscard(Effect.gen(function*() {
  const events = yield* Events
  const fanOut = yield* FanOut
  yield* events.consumeBatch("webhooks", fanOut.handleAll, { types: sourceEventTypes, from: "now" })
}))
