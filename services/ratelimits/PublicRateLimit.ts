import { Clock, Context, Effect, Layer } from "effect"
import { countNow, rateLimitDecisions } from "../metrics/Metrics.ts"
import { windowStart } from "./RateWindow.ts"
import type { QuotaDecision } from "./RequestQuota.ts"

/** Per-client-IP limits of public endpoints (spec: subscribe 10/min, status and widget 100/min). */
export const publicLimits = {
  subscribe: 10,
  status: 100,
  widget: 100,
  feed: 600,
  badge: 600
} as const
export type PublicEndpoint = keyof typeof publicLimits

/**
 * Fixed one-minute windows per (endpoint, IP), kept in this runner's memory: public
 * traffic never touches an organization's quota. Behind a load balancer that spreads
 * one client over N runners the effective limit is up to N times the table's.
 */
export class PublicRateLimit extends Context.Service<PublicRateLimit, {
  take(endpoint: PublicEndpoint, ip: string): Effect.Effect<QuotaDecision>
  /**
   * `take`, synchronously: for the raw fast path of cached answers. Both read the clock the
   * layer was built with, so they share one window (a test's TestClock included).
   */
  takeNow(endpoint: PublicEndpoint, ip: string): QuotaDecision
}>()("canopy/ratelimits/PublicRateLimit") {
  static readonly layer = Layer.effect(
    PublicRateLimit,
    Clock.clockWith((clock) =>
      Effect.sync(() => {
        let currentStart = 0
        let counts = new Map<string, number>()
        const takeNow = (endpoint: PublicEndpoint, ip: string): QuotaDecision => {
          const now = clock.currentTimeMillisUnsafe()
          const start = windowStart(now)
          if (start !== currentStart) {
            currentStart = start
            counts = new Map()
          }
          const key = `${endpoint} ${ip}`
          const used = counts.get(key) ?? 0
          const limit = publicLimits[endpoint]
          const allowed = used < limit
          if (allowed) counts.set(key, used + 1)
          countNow(rateLimitDecisions, { limiter: "public", endpoint, decision: allowed ? "allowed" : "limited" })
          return {
            allowed,
            limit,
            remaining: Math.max(0, limit - used - (allowed ? 1 : 0)),
            reset: start + 60,
            retryAfter: Math.max(1, start + 60 - Math.floor(now / 1000))
          }
        }
        return PublicRateLimit.of({
          take: (endpoint, ip) => Effect.sync(() => takeNow(endpoint, ip)),
          takeNow
        })
      })
    )
  )
}
