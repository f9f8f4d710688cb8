import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Components } from "../../../services/status/Components.ts"
import { CanopyApi } from "../Api.ts"
import { CurrentPrincipal } from "../tenancy/Security.ts"

const orgId = CurrentPrincipal.pipe(Effect.map((principal) => principal.org.id))

export const ComponentsHandlers = HttpApiBuilder.group(
  CanopyApi,
  "components",
  Effect.fn(function*(handlers) {
    const components = yield* Components
    return handlers.handleAll({
      list: () => Effect.flatMap(orgId, (org) => components.list(org)),
      create: ({ payload }) => Effect.flatMap(orgId, (org) => components.create(org, payload)),
      get: ({ params }) => Effect.flatMap(orgId, (org) => components.get(org, params.id)),
      update: ({ params, payload }) => Effect.flatMap(orgId, (org) => components.update(org, params.id, payload)),
      remove: ({ params }) => Effect.flatMap(orgId, (org) => components.remove(org, params.id))
    })
  })
)
