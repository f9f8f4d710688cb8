import { DateTime, PrimaryKey, Schema } from "effect"
import { ClusterSchema, DeliverAt, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"

/**
 * PROTOTYPE (DeliverAt timers, for the bench comparison): the entity's next check and retries are
 * persisted messages delivered at their time.
 */
export const MonitorInfo = Schema.Struct({
  running: Schema.Boolean,
  runner: Schema.String
})

/** The next slot, delivered at `expected` (deduplicated per slot). */
export class CheckAt extends Schema.Class<CheckAt>("canopy/Monitor/CheckAt")({
  expected: Schema.Number,
  frequency: Schema.Number
}) {
  [PrimaryKey.symbol]() {
    return `slot:${this.expected}`
  }
  [DeliverAt.symbol]() {
    return DateTime.makeUnsafe(this.expected)
  }
}

/** Another attempt of a claimed slot, delivered at `at`. */
export class RetryAt extends Schema.Class<RetryAt>("canopy/Monitor/RetryAt")({
  at: Schema.Number,
  slotAt: Schema.Number,
  attempt: Schema.Number,
  nextCheckAt: Schema.Number,
  frequency: Schema.Number,
  retryInterval: Schema.Number
}) {
  [PrimaryKey.symbol]() {
    return `retry:${this.slotAt}:${this.attempt}`
  }
  [DeliverAt.symbol]() {
    return DateTime.makeUnsafe(this.at)
  }
}

export const Wake = Rpc.make("Wake")
export const Reload = Rpc.make("Reload")
export const Check = Rpc.make("Check", { payload: CheckAt }).annotate(ClusterSchema.Persisted, true)
export const Retry = Rpc.make("Retry", { payload: RetryAt }).annotate(ClusterSchema.Persisted, true)
export const Inspect = Rpc.make("Inspect", { success: MonitorInfo })

export const Monitor = Entity.make("Monitor", [Wake, Reload, Check, Retry, Inspect])
