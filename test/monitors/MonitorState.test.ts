import { describe, expect, it } from "@effect/vitest"
import {
  currentSlot,
  heartbeatStatus,
  type MonitorCheckState,
  type MonitorStatus,
  nextSlot,
  retryFits,
  transition
} from "../../services/monitors/MonitorState.ts"

const up = { status: "up" as const, responseTimeMs: 120 }
const slow = { status: "up" as const, responseTimeMs: 900 }
const down = { status: "down" as const, responseTimeMs: 30 }

/** Runs a sequence of results through `transition`, collecting what each step decided. */
const run = (
  start: MonitorCheckState,
  results: ReadonlyArray<typeof up | typeof slow | typeof down>,
  threshold?: number
) => {
  let state = start
  return results.map((result) => {
    const step = transition(state, result, threshold)
    state = { ...state, status: step.status, consecutiveFailures: step.consecutiveFailures }
    return step
  })
}

describe("MonitorState", () => {
  it("decides the heartbeat status from the result and the degraded threshold", () => {
    expect(heartbeatStatus(up, undefined)).toBe("up")
    expect(heartbeatStatus(slow, null)).toBe("up")
    expect(heartbeatStatus(slow, 500)).toBe("degraded")
    expect(heartbeatStatus({ status: "up", responseTimeMs: 500 }, 500)).toBe("up")
    expect(heartbeatStatus(down, 500)).toBe("down")
  })

  // status, consecutiveFailures, retries, result → heartbeat, new status, failures, changed, retry
  const table: ReadonlyArray<
    readonly [MonitorStatus, number, number, "up" | "slow" | "down", string, MonitorStatus, number, boolean, boolean]
  > = [
    ["pending", 0, 1, "up", "up", "up", 0, true, false],
    ["pending", 0, 1, "down", "down", "pending", 1, false, true],
    ["pending", 1, 1, "down", "down", "down", 2, true, false],
    ["pending", 0, 0, "down", "down", "down", 1, true, false],
    ["up", 0, 0, "down", "down", "down", 1, true, false],
    ["up", 0, 1, "down", "down", "up", 1, false, true],
    ["up", 1, 1, "down", "down", "down", 2, true, false],
    ["up", 0, 3, "down", "down", "up", 1, false, true],
    ["up", 2, 3, "down", "down", "up", 3, false, true],
    ["up", 3, 3, "down", "down", "down", 4, true, false],
    ["up", 1, 1, "up", "up", "up", 0, false, false],
    ["up", 0, 1, "slow", "degraded", "degraded", 0, true, false],
    ["degraded", 0, 1, "slow", "degraded", "degraded", 0, false, false],
    ["degraded", 0, 1, "up", "up", "up", 0, true, false],
    ["degraded", 0, 1, "down", "down", "degraded", 1, false, true],
    ["down", 5, 1, "down", "down", "down", 6, false, false],
    ["down", 5, 10, "down", "down", "down", 6, false, false],
    ["down", 5, 1, "up", "up", "up", 0, true, false],
    ["down", 5, 1, "slow", "degraded", "degraded", 0, true, false],
    ["paused", 0, 1, "up", "up", "up", 0, true, false],
    ["paused", 0, 1, "down", "down", "paused", 1, false, true]
  ]

  it.each(table)(
    "%s (failures %i, retries %i) + %s → heartbeat %s, status %s",
    (status, failures, retries, result, beat, next, nextFailures, changed, retry) => {
      const outcome = transition(
        { status, consecutiveFailures: failures, retries },
        result === "up" ? up : result === "slow" ? slow : down,
        500
      )
      expect(outcome).toEqual({
        heartbeatStatus: beat,
        status: next,
        consecutiveFailures: nextFailures,
        changed,
        retry
      })
    }
  )

  it("turns down only after retries + 1 consecutive failures, and up after one success", () => {
    for (const retries of [0, 1, 2, 5, 10]) {
      const steps = run({ status: "up", consecutiveFailures: 0, retries }, [
        ...Array.from({ length: retries + 1 }, () => down),
        down,
        up
      ])
      // Every attempt before the confirming one asks for a retry and keeps the status.
      for (let i = 0; i < retries; i++) {
        expect(steps[i]).toMatchObject({ status: "up", retry: true, changed: false, heartbeatStatus: "down" })
      }
      expect(steps[retries]).toMatchObject({ status: "down", retry: false, changed: true })
      expect(steps[retries + 1]).toMatchObject({ status: "down", retry: false, changed: false })
      expect(steps[retries + 2]).toMatchObject({ status: "up", changed: true, consecutiveFailures: 0 })
    }
  })

  it("a success between failures resets the count", () => {
    const steps = run({ status: "up", consecutiveFailures: 0, retries: 1 }, [down, up, down, down])
    expect(steps.map((step) => step.status)).toEqual(["up", "up", "up", "down"])
    expect(steps.map((step) => step.consecutiveFailures)).toEqual([1, 0, 1, 2])
  })

  it("keeps slots on their grid and skips missed ones instead of bursting", () => {
    const t0 = Date.UTC(2026, 10, 21, 10, 0, 0)
    expect(nextSlot(t0, 60)).toBe(t0 + 60_000)
    // On time or late by less than one interval: the slot itself.
    expect(currentSlot(t0, t0, 60)).toBe(t0)
    expect(currentSlot(t0, t0 + 59_999, 60)).toBe(t0)
    // Late by one interval or more (downtime): the latest slot of the grid not after now.
    expect(currentSlot(t0, t0 + 60_000, 60)).toBe(t0 + 60_000)
    expect(currentSlot(t0, t0 + 10 * 60_000 + 5_000, 60)).toBe(t0 + 10 * 60_000)
    expect(currentSlot(t0, t0 + 7_200_500, 3600)).toBe(t0 + 7_200_000)
  })

  it("retries only when the retry fits before the next slot", () => {
    const t0 = 1_000_000
    expect(retryFits(t0, 20, t0 + 60_000)).toBe(true)
    expect(retryFits(t0 + 40_000, 20, t0 + 60_000)).toBe(false)
    expect(retryFits(t0, 60, t0 + 60_000)).toBe(false)
  })
})
