/**
 * A mergeable quantile sketch of latencies (DDSketch, Masson et al., VLDB 2019): values fall
 * into logarithmic buckets `(γ^(i-1), γ^i]` with `γ = (1+α)/(1-α)`, so any quantile read
 * back is within the relative accuracy `α` of the exact value at that rank, whatever the
 * distribution. Two sketches merge by adding counts bucket by bucket — exactly, in any
 * order — which is what lets hourly rollups combine into days and windows (in SQL too:
 * `latency_sketch_merge`).
 *
 * Stored as `{ "<bucket index>": count, "z": count }`, `z` holding values too small to
 * matter (below 1 µs, read back as 0).
 */

/** Relative accuracy: half the 1% the statistics promise, leaving room for rounding. */
export const RELATIVE_ACCURACY = 0.005
const gamma = (1 + RELATIVE_ACCURACY) / (1 - RELATIVE_ACCURACY)
const logGamma = Math.log(gamma)
/** Milliseconds; anything at or below counts as zero. */
const MIN_VALUE = 1e-3
const ZERO_KEY = "z"

export type LatencySketch = Record<string, number>

export const bucketKey = (value: number): string =>
  value <= MIN_VALUE ? ZERO_KEY : String(Math.ceil(Math.log(value) / logGamma))

/** The value a bucket stands for: within α of every value it holds. */
const bucketValue = (key: string): number => {
  if (key === ZERO_KEY) return 0
  return (2 * Math.pow(gamma, Number(key))) / (gamma + 1)
}

export const empty = (): LatencySketch => ({})

/** Adds `value` (ms) `count` times, in place. */
export const add = (sketch: LatencySketch, value: number, count = 1): LatencySketch => {
  const key = bucketKey(value)
  sketch[key] = (sketch[key] ?? 0) + count
  return sketch
}

export const fromValues = (values: Iterable<number>): LatencySketch => {
  const sketch = empty()
  for (const value of values) add(sketch, value)
  return sketch
}

/** Adds `other` into `into`, in place. */
export const mergeInto = (into: LatencySketch, other: LatencySketch): LatencySketch => {
  for (const key in other) into[key] = (into[key] ?? 0) + other[key]
  return into
}

export const count = (sketch: LatencySketch): number => {
  let total = 0
  for (const key in sketch) total += sketch[key]
  return total
}

/**
 * The nearest-rank quantile: the value at rank ⌈q·n⌉ of the sorted values, within α;
 * 0 for an empty sketch.
 */
export const quantile = (sketch: LatencySketch, q: number): number => {
  const total = count(sketch)
  if (total === 0) return 0
  const rank = Math.max(1, Math.ceil(q * total))
  const keys = Object.keys(sketch).sort(byBucket)
  let seen = 0
  for (const key of keys) {
    seen += sketch[key]
    if (seen >= rank) return bucketValue(key)
  }
  return bucketValue(keys[keys.length - 1])
}

const byBucket = (a: string, b: string) =>
  a === ZERO_KEY ? (b === ZERO_KEY ? 0 : -1) : b === ZERO_KEY ? 1 : Number(a) - Number(b)
