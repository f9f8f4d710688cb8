import { Context, Effect, Layer, Option, Redacted } from "effect"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import type * as Types from "effect/Types"
import { hash, timingSafeEqual } from "node:crypto"
import { Forbidden, RateLimited, Unauthorized } from "../../../schemas/platform/Errors.ts"
import { AppConfig } from "../../../services/platform/AppConfig.ts"
import { PublicRateLimit } from "../../../services/ratelimits/PublicRateLimit.ts"
import { type QuotaDecision, RequestQuota } from "../../../services/ratelimits/RequestQuota.ts"
import { ApiKeys } from "../../../services/tenancy/ApiKeys.ts"
import { clientIp } from "../Edge.ts"
import { noteOrganization, RequestState } from "../RequestState.ts"
import {
  AdminAuthentication,
  Authentication,
  CurrentPrincipal,
  PublicLimit,
  PublicRateLimited,
  RequiredScope
} from "./Security.ts"

export const rateLimitHeaders = (decision: { limit: number; remaining: number; reset: number }) => ({
  "x-ratelimit-limit": String(decision.limit),
  "x-ratelimit-remaining": String(decision.remaining),
  "x-ratelimit-reset": String(decision.reset)
})

/**
 * Records the rate-limit headers for the edge to put on the response, and turns a spent
 * quota into the spec's 429 (the headers then include `Retry-After`).
 */
const applyDecision = (decision: QuotaDecision) =>
  Effect.map(Effect.context<never>(), (context): RateLimited | undefined => {
    const headers: Record<string, string> = rateLimitHeaders(decision)
    const state = Context.getOrUndefined(context, RequestState)
    if (state !== undefined) state.rateLimitHeaders = headers
    if (decision.allowed) return undefined
    headers["retry-after"] = String(decision.retryAfter)
    return new RateLimited({
      message: `Rate limit of ${decision.limit} requests per minute exceeded; retry in ${decision.retryAfter} s`,
      retryAfter: decision.retryAfter
    })
  })

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const keys = yield* ApiKeys
    const quota = yield* RequestQuota
    return Authentication.of({
      bearer: (httpEffect, { credential, endpoint }) =>
        keys.authenticate(Redacted.value(credential)).pipe(
          Effect.flatMap((principal) =>
            quota.take(principal.org.id, principal.org.requestsPerMinute).pipe(
              Effect.flatMap(applyDecision),
              Effect.flatMap((rejection): Effect.Effect<
                HttpServerResponse.HttpServerResponse,
                Forbidden | RateLimited | Types.unhandled
              > => {
                if (rejection !== undefined) return Effect.fail(rejection)
                const required = Context.getOption(endpoint.annotations, RequiredScope)
                if (Option.isSome(required) && !principal.scopes.includes(required.value)) {
                  return Effect.fail(new Forbidden({ message: `This key lacks the '${required.value}' scope` }))
                }
                return Effect.andThen(
                  noteOrganization(principal.org.id),
                  Effect.annotateLogs(
                    Effect.provideService(httpEffect, CurrentPrincipal, principal),
                    "orgId",
                    principal.org.id
                  )
                )
              })
            )
          )
        )
    })
  })
)

export const PublicRateLimitedLive = Layer.effect(
  PublicRateLimited,
  Effect.gen(function*() {
    const limits = yield* PublicRateLimit
    return PublicRateLimited.of((httpEffect, { endpoint }) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const name = Context.getOption(endpoint.annotations, PublicLimit)
        if (Option.isNone(name)) return yield* httpEffect
        const rejection = yield* applyDecision(yield* limits.take(name.value, clientIp(request)))
        if (rejection !== undefined) return yield* rejection
        return yield* httpEffect
      })
    )
  })
)

const digest = (value: string) => hash("sha256", value, "buffer")

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
