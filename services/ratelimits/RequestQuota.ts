import { Clock, Context, Effect, Layer } from "effect"
import { countNow, rateLimitDecisions } from "../metrics/Metrics.ts"
import { type LeaseResult, Organization } from "./OrganizationProtocol.ts"
import { leaseSize, windowStart } from "./RateWindow.ts"

export interface QuotaDecision {
  readonly allowed: boolean
  readonly limit: number
  readonly remaining: number
  /** Unix second the window ends. */
  readonly reset: number
  /** Seconds until the window ends (at least 1): `Retry-After` when not allowed. */
  readonly retryAfter: number
}

const allowedLabels = { limiter: "request", endpoint: "api", decision: "allowed" }
const limitedLabels = { limiter: "request", endpoint: "api", decision: "limited" }

interface LocalLease {
  readonly start: number
  readonly limit: number
  /** Requests this runner took from the entity and has not spent yet. */
  left: number
  /** What the entity had left after the last lease. */
  entityRemaining: number
  exhausted: boolean
}

/**
 * The per-organization request quota as this runner sees it. The organization's entity
 * is the authority; the runner leases small batches from it (see `leaseSize`) so most
 * requests are decided locally, and one runner's decision never exceeds the plan.
 */
export class RequestQuota extends Context.Service<RequestQuota, {
  take(orgId: string, limit: number): Effect.Effect<QuotaDecision>
  /** The organization's window as its entity counts it (across runners), taking nothing. */
  read(orgId: string, limit: number): Effect.Effect<LeaseResult>
}>()("canopy/ratelimits/RequestQuota") {
  static readonly layer = Layer.effect(
    RequestQuota,
    Effect.gen(function*() {
      const client = yield* Organization.client
      const leases = new Map<string, LocalLease>()

      const currentLease = (orgId: string, limit: number, start: number): LocalLease => {
        let local = leases.get(orgId)
        if (local === undefined || local.start !== start || local.limit !== limit) {
          local = { start, limit, left: 0, entityRemaining: limit, exhausted: false }
          leases.set(orgId, local)
        }
        return local
      }

      const decide = (local: LocalLease, now: number): QuotaDecision => {
        const reset = local.start + 60
        const retryAfter = Math.max(1, reset - Math.floor(now / 1000))
        if (local.left === 0) return { allowed: false, limit: local.limit, remaining: 0, reset, retryAfter }
        local.left -= 1
        return { allowed: true, limit: local.limit, remaining: local.entityRemaining + local.left, reset, retryAfter }
      }

      // Counted synchronously, with constant labels: this runs on every API request.
      const take = (orgId: string, limit: number): Effect.Effect<QuotaDecision> =>
        Effect.map(decideFor(orgId, limit), (decision) => {
          countNow(rateLimitDecisions, decision.allowed ? allowedLabels : limitedLabels, orgId)
          return decision
        })

      const decideFor = (orgId: string, limit: number): Effect.Effect<QuotaDecision> =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const local = currentLease(orgId, limit, windowStart(now))
          if (local.left > 0 || local.exhausted) return Effect.succeed(decide(local, now))
          return client(orgId).Lease({ limit, want: leaseSize(limit) }).pipe(
            Effect.orDie,
            Effect.map((result) => {
              // Another fiber may have refilled the lease while this one waited.
              local.left += result.granted
              local.entityRemaining = result.remaining
              local.exhausted = result.granted === 0 && local.left === 0
              return decide(local, now)
            })
          )
        })

      const read = (orgId: string, limit: number) => client(orgId).Lease({ limit, want: 0 }).pipe(Effect.orDie)

      return RequestQuota.of({ take, read })
    })
  )
}
