/**
 * The retry/confirmation rule of GUIDE §6 as pure functions, so it is testable without
 * the cluster or a database:
 *
 * - a passing check is `up`, or `degraded` when slower than `degradedThresholdMs`; one
 *   passing check is enough to leave `down` (or `pending`);
 * - a failing check gives a `down` heartbeat, but the monitor turns `down` only after
 *   `retries + 1` consecutive failures; before that it keeps its status and the slot is
 *   retried after `retryInterval` seconds (attempt 1, 2, …);
 * - a monitor that is already `down` is not retried: the regular schedule continues and
 *   the first success brings it back.
 */

export type MonitorStatus = "pending" | "up" | "degraded" | "down" | "paused"
export type HeartbeatStatus = "up" | "degraded" | "down"

export interface MonitorCheckState {
  readonly status: MonitorStatus
  readonly consecutiveFailures: number
  /** Extra attempts before a failure is confirmed (0–10). */
  readonly retries: number
}

export interface CheckOutcome {
  readonly status: "up" | "down"
  readonly responseTimeMs: number
}

export interface Transition {
  /** Status written on the heartbeat of this attempt. */
  readonly heartbeatStatus: HeartbeatStatus
  /** The monitor's status after this attempt. */
  readonly status: MonitorStatus
  readonly consecutiveFailures: number
  /** The monitor's status changed (publish `monitor.status`, reset `status_since`). */
  readonly changed: boolean
  /** Failure not yet confirmed: run another attempt of the same slot after `retryInterval`. */
  readonly retry: boolean
}

/** Heartbeat status of one check: `degraded` when it passed but slower than the threshold. */
export const heartbeatStatus = (
  result: CheckOutcome,
  degradedThresholdMs: number | null | undefined
): HeartbeatStatus => {
  if (result.status === "down") return "down"
  return degradedThresholdMs != null && result.responseTimeMs > degradedThresholdMs ? "degraded" : "up"
}

/** Applies one check result to the monitor's state. */
export const transition = (
  state: MonitorCheckState,
  result: CheckOutcome,
  degradedThresholdMs?: number | null
): Transition => {
  const beat = heartbeatStatus(result, degradedThresholdMs)
  if (beat !== "down") {
    return {
      heartbeatStatus: beat,
      status: beat,
      consecutiveFailures: 0,
      changed: state.status !== beat,
      retry: false
    }
  }
  const consecutiveFailures = state.consecutiveFailures + 1
  const confirmed = state.status === "down" || consecutiveFailures >= Math.max(0, state.retries) + 1
  const status: MonitorStatus = confirmed ? "down" : state.status
  return {
    heartbeatStatus: "down",
    status,
    consecutiveFailures,
    changed: status !== state.status,
    retry: !confirmed
  }
}

// ---------------------------------------------------------------------------
// Slot arithmetic
// ---------------------------------------------------------------------------

/**
 * The slot to check when the loop wakes at `now` for the scheduled slot `scheduled`
 * (both epoch ms). Slots form a grid `scheduled + k × frequency`. A slot late by less
 * than one interval is checked as is; after downtime (a restart, a shard hand-off, a
 * paused monitor re-activated) the missed slots are NOT replayed as a burst: the check
 * runs once, now, for the latest slot of the grid not after `now`, and the schedule
 * continues from there.
 */
export const currentSlot = (scheduled: number, now: number, frequencySeconds: number): number => {
  const frequencyMs = frequencySeconds * 1000
  if (now - scheduled < frequencyMs) return scheduled
  return scheduled + Math.floor((now - scheduled) / frequencyMs) * frequencyMs
}

/** The slot after `slot`. */
export const nextSlot = (slot: number, frequencySeconds: number): number => slot + frequencySeconds * 1000

/**
 * After a frequency change, the next check is due one new interval after the last check
 * (`last`, or now when there was none), never in the past. A lowered frequency moves the
 * next check earlier (the PATCH), a raised one later (the entity's `Reload`).
 */
export const slotAfterFrequencyChange = (last: number | undefined, frequencySeconds: number, now: number): number =>
  Math.max(now, nextSlot(last ?? now, frequencySeconds))

/**
 * Whether another attempt of the current slot fits before the next slot: retries that
 * would run into the next slot are dropped, and that slot's check takes their place
 * (consecutive failures carry over, so confirmation still needs `retries + 1` failures).
 */
export const retryFits = (now: number, retryIntervalSeconds: number, next: number): boolean =>
  now + retryIntervalSeconds * 1000 < next
