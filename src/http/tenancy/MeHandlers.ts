import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { AppConfig } from "../../../services/platform/AppConfig.ts"
import type { Principal } from "../../../services/tenancy/ApiKeys.ts"
import { CanopyApi } from "../Api.ts"
import { builtOn } from "../ApiRequestContext.ts"
import { dsnsForBase } from "../observe/Dsn.ts"
import { Authentication, CurrentPrincipal } from "./Security.ts"

export const MeHandlers = HttpApiBuilder.group(
  CanopyApi,
  "me",
  Effect.fn(function*(handlers) {
    const { baseUrl } = yield* AppConfig
    const dsnsFor = dsnsForBase(baseUrl)
    // The body depends only on the principal (one object per cached key lookup, replaced when
    // the lookup is evicted) and the key: it is serialised once per lookup, not per request.
    const bodies = new WeakMap<Principal, { readonly key: string; readonly body: string }>()
    const bodyFor = (principal: Principal, key: string) => {
      const cached = bodies.get(principal)
      if (cached !== undefined && cached.key === key) return cached.body
      const body = JSON.stringify({
        user: { ...principal.user, role: principal.role },
        org: principal.org,
        scopes: principal.scopes,
        ...dsnsFor(key, principal.org)
      })
      bodies.set(principal, { key, body })
      return body
    }
    return handlers.handleAll({
      // The hottest authenticated route: the principal was built from typed rows, so the
      // body is serialised directly instead of being re-validated by the `Me` schema.
      me: () =>
        Effect.zipWith(CurrentPrincipal, HttpServerRequest.HttpServerRequest, (principal, request) => {
          // The DSNs carry the key the caller authenticated with (only its hash is stored).
          const key = (request.headers["authorization"] ?? "").replace(/^Bearer\s+/i, "").trim()
          return HttpServerResponse.text(bodyFor(principal, key), { contentType: "application/json" })
        })
    })
  })
).pipe(
  // The hottest route: its endpoint merges a two-service context into each request, not the app's.
  builtOn(AppConfig, Authentication)
)
