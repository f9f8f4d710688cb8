import { Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"

/**
 * The monitor entity's protocol: one entity per monitor, owning its schedule. How the
 * schedule works is told in `MonitorScheduling.ts`; the handlers are in `MonitorEntity.ts`.
 */
export const MonitorInfo = Schema.Struct({
  /** An alarm (next slot or retry) is armed on the hosting runner. */
  running: Schema.Boolean,
  /** The runner hosting this entity. */
  runner: Schema.String
})

/** Re-read the monitor and arm its next check (idempotent). */
export const Wake = Rpc.make("Wake")
/** The monitor's configuration changed: re-read it (start, stop, reschedule). */
export const Reload = Rpc.make("Reload")
/** The slot the entity last saw as `next_check_at` is due: claim it and check. */
export const Check = Rpc.make("Check", {
  payload: { expected: Schema.Number, frequency: Schema.Number }
})
/** Another attempt of a claimed slot whose failure is not confirmed yet. */
export const Retry = Rpc.make("Retry", {
  payload: {
    slotAt: Schema.Number,
    attempt: Schema.Number,
    nextCheckAt: Schema.Number,
    frequency: Schema.Number,
    retryInterval: Schema.Number
  }
})
/** Whether the schedule is armed, and where (operators, tests). */
export const Inspect = Rpc.make("Inspect", { success: MonitorInfo })

export const Monitor = Entity.make("Monitor", [Wake, Reload, Check, Retry, Inspect])
