import { windowLengthSeconds, windowStart } from "../ratelimits/RateWindow.ts"

/**
 * Sampling above the plan's events per minute (GUIDE §5, §7), as pure arithmetic over one
 * organization's minute windows (aligned like the request quota's).
 *
 * The minute's `expected` total is the larger of the previous minute's total and this
 * minute's count so far. While it is within `limit` every event is kept; above, an event
 * is kept with probability `limit / expected` (and a sample weight of its inverse), and
 * only while fewer than `limit` were kept this minute. So a steady overload keeps about
 * `limit` per minute spread over the minute, and a sudden burst (a quiet previous
 * minute) keeps its first `limit` events: never more than `limit` plus the first event
 * of each new fingerprint, which is always kept.
 * Spans are not sampled (they feed rollups); they are counted in the window.
 */
export interface SamplingWindow {
  /** Unix second the minute started. */
  readonly start: number
  /** Events seen this minute (kept or not). */
  readonly total: number
  /** Events kept this minute. */
  readonly kept: number
  /** Events seen in the minute before `start` (0 when that minute saw none). */
  readonly previousTotal: number
}

export const emptyWindow: SamplingWindow = { start: 0, total: 0, kept: 0, previousTotal: 0 }

/** The window current at `nowMillis`, rolled over from `window` when a minute passed. */
export const currentWindow = (window: SamplingWindow, nowMillis: number): SamplingWindow => {
  const start = windowStart(nowMillis)
  if (start === window.start) return window
  const previousTotal = start - window.start === windowLengthSeconds ? window.total : 0
  return { start, total: 0, kept: 0, previousTotal }
}

export interface Decision {
  readonly window: SamplingWindow
  /** 0 when dropped; else how many events the kept one stands for. */
  readonly weight: number
}

/**
 * Decides one event. `limit` null means unlimited; `force` keeps it whatever the budget
 * (the first event of a new fingerprint, spans); `random` is uniform in [0, 1).
 */
export const decide = (
  window: SamplingWindow,
  limit: number | null,
  force: boolean,
  random: number
): Decision => {
  const total = window.total + 1
  const keep = (weight: number): Decision => ({ window: { ...window, total, kept: window.kept + 1 }, weight })
  const expected = Math.max(window.previousTotal, total)
  if (limit === null || expected <= limit) return keep(1)
  const probability = limit / expected
  const weight = 1 / probability
  // A forced event stands for itself: the ones sampled away are stood for by the sampled ones.
  if (force) return keep(1)
  if (window.kept < limit && random < probability) return keep(weight)
  return { window: { ...window, total }, weight: 0 }
}

/** The event-quota headers of an ingest response (none when unlimited). */
export const quotaHeaders = (window: SamplingWindow, limit: number | null): Record<string, string> =>
  limit === null ? {} : {
    "x-ratelimit-limit": String(limit),
    "x-ratelimit-remaining": String(Math.max(0, limit - window.total)),
    "x-ratelimit-reset": String(window.start + windowLengthSeconds)
  }
