import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ApiKeys } from "../../../services/tenancy/ApiKeys.ts"
import { CanopyApi } from "../Api.ts"
import { CurrentPrincipal } from "./Security.ts"

export const OrgHandlers = HttpApiBuilder.group(
  CanopyApi,
  "org",
  Effect.fn(function*(handlers) {
    const keys = yield* ApiKeys
    return handlers.handleAll({
      listKeys: () =>
        CurrentPrincipal.pipe(
          Effect.flatMap((principal) => keys.list(principal.org.id)),
          Effect.map((list) => ({ keys: list, count: list.length }))
        ),
      revokeKey: ({ params }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((principal) => keys.revoke(params.id, { orgId: principal.org.id })),
          Effect.asVoid
        )
    })
  })
)
