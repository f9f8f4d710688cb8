/**
 * Fixed 60-second windows aligned to the minute (GUIDE §5). Pure arithmetic so the
 * organization entity (state and timing) and the tests share one definition.
 */
export interface RateWindow {
  /** Unix second the window started. */
  readonly start: number
  readonly used: number
}

export interface Lease {
  readonly window: RateWindow
  readonly granted: number
  readonly remaining: number
  /** Unix second the window ends: `X-RateLimit-Reset`. */
  readonly reset: number
}

export const windowLengthSeconds = 60

export const windowStart = (nowMillis: number): number =>
  Math.floor(nowMillis / 1000 / windowLengthSeconds) * windowLengthSeconds

/** Takes up to `want` requests from the current window; `granted` 0 means the quota is spent. */
export const lease = (current: RateWindow, nowMillis: number, limit: number, want: number): Lease => {
  const start = windowStart(nowMillis)
  const used = current.start === start ? current.used : 0
  const granted = Math.max(0, Math.min(want, limit - used))
  return {
    window: { start, used: used + granted },
    granted,
    remaining: Math.max(0, limit - used - granted),
    reset: start + windowLengthSeconds
  }
}

/**
 * How many requests a runner takes from the organization entity at once. Small quotas
 * are leased one by one so they stay exact; large ones in chunks of 2% so the entity is
 * not called on every request. Tokens a runner leased but did not use lapse with the window.
 */
export const leaseSize = (limit: number): number => Math.max(1, Math.floor(limit / 50))
