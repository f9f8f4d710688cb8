import { Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"

export const LeaseResult = Schema.Struct({
  granted: Schema.Int,
  remaining: Schema.Int,
  reset: Schema.Int,
  used: Schema.Int,
  /** The runner hosting this organization's entity (for operators and the failover test). */
  runner: Schema.String
})
export type LeaseResult = typeof LeaseResult.Type

/** Take up to `want` requests of the current window; `want` 0 only reads the window. */
export const Lease = Rpc.make("Lease", {
  payload: { limit: Schema.Int, want: Schema.Int },
  success: LeaseResult
})

/** One entity per organization: the single authority on its request quota, whichever runner asks. */
export const Organization = Entity.make("Organization", [Lease])
