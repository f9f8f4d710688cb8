import { describe, expect, it } from "@effect/vitest"
import { currentWindow, decide, emptyWindow, type SamplingWindow } from "../../services/observe/Sampling.ts"

const minute = 60_000
const t0 = Date.UTC(2026, 10, 23, 10, 0, 0)

/** Runs `n` events through one window at `now`; returns the window and the kept weights. */
const run = (window: SamplingWindow, now: number, n: number, limit: number | null, random = Math.random) => {
  let current = currentWindow(window, now)
  const weights: Array<number> = []
  for (let i = 0; i < n; i++) {
    const decision = decide(current, limit, false, random())
    current = decision.window
    if (decision.weight > 0) weights.push(decision.weight)
  }
  return { window: current, weights }
}

describe("sampling", () => {
  it("keeps everything up to the limit, nothing above it in a first burst", () => {
    const { weights, window } = run(emptyWindow, t0, 500, 100)
    expect(weights.length).toBe(100)
    expect(weights.every((weight) => weight === 1)).toBe(true)
    expect(window).toMatchObject({ total: 500, kept: 100 })
  })

  it("forced events (new fingerprints) are kept above the limit", () => {
    const full = run(emptyWindow, t0, 100, 100).window
    const forced = decide(full, 100, true, 0.99)
    expect(forced.weight).toBe(1)
    expect(forced.window.kept).toBe(101)
  })

  it("a steady overload keeps about the limit per minute, weighted to stand for all", () => {
    let seeded = 1
    const random = () => (seeded = (seeded * 16807) % 2147483647) / 2147483647
    const first = run(emptyWindow, t0, 1000, 100, random)
    const second = run(first.window, t0 + minute, 1000, 100, random)
    expect(second.window.previousTotal).toBe(1000)
    // About 1 in 10 from the start of the minute, each standing for 10; never over the limit.
    expect(second.weights.length).toBeLessThanOrEqual(100)
    expect(second.weights.length).toBeGreaterThan(75)
    expect(new Set(second.weights)).toEqual(new Set([10]))
  })

  it("unlimited plans keep every event", () => {
    expect(run(emptyWindow, t0, 5000, null).weights.length).toBe(5000)
  })

  it("windows roll over on the minute; a gap forgets the previous total", () => {
    const first = run(emptyWindow, t0 + 59_000, 10, 100).window
    expect(currentWindow(first, t0 + minute)).toEqual({
      start: (t0 + minute) / 1000,
      total: 0,
      kept: 0,
      previousTotal: 10
    })
    expect(currentWindow(first, t0 + 3 * minute).previousTotal).toBe(0)
  })
})
