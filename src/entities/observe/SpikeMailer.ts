import { Effect, Layer, Option } from "effect"
import { SpikeEvent } from "../../../schemas/observe/Observe.ts"
import { Events } from "../../../services/events/Events.ts"
import { Alerts } from "../../../services/observe/Alerts.ts"

/**
 * E-mails every `observe.spike` to the organization's owners: a durable consumer of the
 * outbox, so a spike raised just before a crash is still mailed (at least once), from
 * whichever runner holds the consumer.
 */
export const SpikeMailer = Layer.effectDiscard(Effect.gen(function*() {
  const events = yield* Events
  const alerts = yield* Alerts
  yield* events.consume(
    "observe.spike-mail",
    (event) => {
      const data = SpikeEvent.match(event)
      return event.orgId === null || Option.isNone(data) ? Effect.void : alerts.mailOwners(event.orgId, data.value)
    },
    { types: [SpikeEvent.type], from: "now" }
  )
}))
