import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { CanopyApi } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/Security.ts"

export const MeHandlers = HttpApiBuilder.group(
  CanopyApi,
  "me",
  Effect.fn(function*(handlers) {
    return handlers.handleAll({
      // The hottest authenticated route: the principal was built from typed rows, so the
      // body is serialised directly instead of being re-validated by the `Me` schema.
      me: () =>
        Effect.map(CurrentPrincipal, (principal) =>
          HttpServerResponse.jsonUnsafe({
            user: { ...principal.user, role: principal.role },
            org: principal.org,
            scopes: principal.scopes
          }))
    })
  })
)
