import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import * as Sketch from "../../services/observe/LatencySketch.ts"

/** The exact nearest-rank quantile: the value at rank ⌈q·n⌉ of the sorted values. */
const exactQuantile = (values: ReadonlyArray<number>, q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1]
}

const withinOnePercent = (estimate: number, exact: number) =>
  exact <= 1e-3 ? estimate === 0 : Math.abs(estimate - exact) <= 0.01 * exact

const Latencies = Schema.Array(Schema.Number.check(Schema.isBetween({ minimum: 0, maximum: 600_000 })))
  .check(Schema.isMinLength(1), Schema.isMaxLength(400))

describe("LatencySketch", () => {
  it.prop("every quantile is within 1% of the exact value", [Latencies], ([values]) => {
    const sketch = Sketch.fromValues(values)
    for (const q of [0.01, 0.5, 0.9, 0.95, 0.99, 1]) {
      const exact = exactQuantile(values, q)
      const estimate = Sketch.quantile(sketch, q)
      if (!withinOnePercent(estimate, exact)) {
        throw new Error(`q=${q}: estimate ${estimate} vs exact ${exact}`)
      }
    }
  })

  it.prop("merging sketches equals sketching the union, in any order", [Latencies, Latencies, Latencies], (
    [a, b, c]
  ) => {
    const union = Sketch.fromValues([...a, ...b, ...c])
    const left = Sketch.mergeInto(Sketch.mergeInto(Sketch.fromValues(a), Sketch.fromValues(b)), Sketch.fromValues(c))
    const right = Sketch.mergeInto(Sketch.fromValues(c), Sketch.mergeInto(Sketch.fromValues(b), Sketch.fromValues(a)))
    expect(left).toEqual(union)
    expect(right).toEqual(union)
    expect(Sketch.count(union)).toBe(a.length + b.length + c.length)
  })

  it("stays small on a wide distribution and survives a JSON round trip", () => {
    const values = Array.from({ length: 100_000 }, (_, i) => 0.5 + (i % 1000) * (i % 97) * 0.37)
    const sketch = Sketch.fromValues(values)
    // Latencies from 0.5 ms to ~35 s fit in well under 2,000 buckets at 0.5% accuracy.
    expect(Object.keys(sketch).length).toBeLessThan(2000)
    const restored = JSON.parse(JSON.stringify(sketch)) as Sketch.LatencySketch
    expect(withinOnePercent(Sketch.quantile(restored, 0.95), exactQuantile(values, 0.95))).toBe(true)
  })

  it("reads an empty sketch as 0 and zero latencies as 0", () => {
    expect(Sketch.quantile(Sketch.empty(), 0.95)).toBe(0)
    expect(Sketch.quantile(Sketch.fromValues([0, 0, 0, 5]), 0.5)).toBe(0)
    expect(withinOnePercent(Sketch.quantile(Sketch.fromValues([0, 0, 0, 5]), 1), 5)).toBe(true)
  })
})
