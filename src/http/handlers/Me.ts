import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CanopyApi } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/Security.ts"

export const MeHandlers = HttpApiBuilder.group(
  CanopyApi,
  "me",
  Effect.fn(function*(handlers) {
    return handlers.handleAll({
      me: () =>
        Effect.map(CurrentPrincipal, (principal) => ({
          user: { ...principal.user, role: principal.role },
          org: principal.org,
          scopes: principal.scopes
        }))
    })
  })
)
