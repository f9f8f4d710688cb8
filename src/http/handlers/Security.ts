import { Clock, Context, Effect, Layer, Option, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"
import { createHash, timingSafeEqual } from "node:crypto"
import { Forbidden, RateLimited, Unauthorized } from "../../../schemas/Errors.ts"
import { ApiKeys } from "../../../services/platform/ApiKeys.ts"
import { AppConfig } from "../../../services/platform/AppConfig.ts"
import {
  AdminAuthentication,
  Authentication,
  CurrentPrincipal,
  PublicLimit,
  PublicRateLimited,
  RequiredScope
} from "../api/Security.ts"
import { clientIp } from "../Edge.ts"
import { PublicRateLimit } from "../PublicRateLimit.ts"
import { type QuotaDecision, RequestQuota } from "../RequestQuota.ts"
import { RequestState } from "../RequestState.ts"

export const rateLimitHeaders = (decision: { limit: number; remaining: number; reset: number }) => ({
  "x-ratelimit-limit": String(decision.limit),
  "x-ratelimit-remaining": String(decision.remaining),
  "x-ratelimit-reset": String(decision.reset)
})

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const keys = yield* ApiKeys
    const quota = yield* RequestQuota
    return Authentication.of({
      bearer: (httpEffect, { credential, endpoint }) =>
        Effect.gen(function*() {
          const principal = yield* keys.authenticate(Redacted.value(credential))
          const rejection = yield* limited(yield* quota.take(principal.org.id, principal.org.requestsPerMinute))
          if (rejection !== undefined) return yield* rejection
          const required = Context.getOption(endpoint.annotations, RequiredScope)
          if (Option.isSome(required) && !principal.scopes.includes(required.value)) {
            return yield* new Forbidden({ message: `This key lacks the '${required.value}' scope` })
          }
          return yield* Effect.provideService(httpEffect, CurrentPrincipal, principal)
        })
    })
  })
)

/** Answers 429 (with the spec body and headers) once a client IP spends an endpoint's limit. */
const limited = (decision: QuotaDecision) =>
  Effect.gen(function*() {
    const headers: Record<string, string> = rateLimitHeaders(decision)
    const state = yield* Effect.serviceOption(RequestState)
    if (Option.isSome(state)) state.value.rateLimitHeaders = headers
    if (decision.allowed) return undefined
    const now = yield* Clock.currentTimeMillis
    const retryAfter = Math.max(1, decision.reset - Math.floor(now / 1000))
    headers["retry-after"] = String(retryAfter)
    return new RateLimited({
      message: `Rate limit of ${decision.limit} requests per minute exceeded; retry in ${retryAfter} s`,
      retryAfter
    })
  })

export const PublicRateLimitedLive = Layer.effect(
  PublicRateLimited,
  Effect.gen(function*() {
    const limits = yield* PublicRateLimit
    return PublicRateLimited.of((httpEffect, { endpoint }) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const name = Context.getOption(endpoint.annotations, PublicLimit)
        if (Option.isNone(name)) return yield* httpEffect
        const rejection = yield* limited(yield* limits.take(name.value, clientIp(request)))
        if (rejection !== undefined) return yield* rejection
        return yield* httpEffect
      })
    )
  })
)

const digest = (value: string) => createHash("sha256").update(value).digest()

export const AdminAuthenticationLive = Layer.effect(
  AdminAuthentication,
  Effect.gen(function*() {
    const config = yield* AppConfig
    const expected = digest(Option.match(config.adminToken, { onNone: () => "", onSome: Redacted.value }))
    const unauthorized = new Unauthorized({ message: "Missing or wrong admin token" })
    return AdminAuthentication.of({
      bearer: (httpEffect, { credential }) => {
        const token = Redacted.value(credential)
        // Compare digests in constant time so the token cannot be guessed byte by byte.
        return token.length > 0 && timingSafeEqual(digest(token), expected) ? httpEffect : Effect.fail(unauthorized)
      }
    })
  })
)
