import { Clock, Context, Effect, Layer } from "effect"
import { count, rateLimitDecisions } from "../metrics/Metrics.ts"
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

const verdict = (decision: QuotaDecision) => decision.allowed ? "allowed" : "limited"

/**
 * Fixed one-minute windows per (endpoint, IP), kept in this runner's memory: public
 * traffic never touches an organization's quota. Behind a load balancer that spreads
 * one client over N runners the effective limit is up to N times the table's.
 */
export class PublicRateLimit extends Context.Service<PublicRateLimit, {
  take(endpoint: PublicEndpoint, ip: string): Effect.Effect<QuotaDecision>
}>()("canopy/ratelimits/PublicRateLimit") {
  static readonly layer = Layer.sync(PublicRateLimit, () => {
    let currentStart = 0
    let counts = new Map<string, number>()
    return PublicRateLimit.of({
      take: (endpoint, ip) =>
        Effect.tap(
          decideAt(endpoint, ip),
          (decision) => count(rateLimitDecisions, { limiter: "public", endpoint, decision: verdict(decision) })
        )
    })

    function decideAt(endpoint: PublicEndpoint, ip: string) {
      return Effect.map(Clock.currentTimeMillis, (now) => {
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
        return {
          allowed,
          limit,
          remaining: Math.max(0, limit - used - (allowed ? 1 : 0)),
          reset: start + 60,
          retryAfter: Math.max(1, start + 60 - Math.floor(now / 1000))
        }
      })
    }
  })
}
