import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Incidents } from "../../../services/incidents/Incidents.ts"
import { CanopyApi } from "../Api.ts"
import { CurrentPrincipal } from "../tenancy/Security.ts"

const orgId = CurrentPrincipal.pipe(Effect.map((principal) => principal.org.id))

export const IncidentsHandlers = HttpApiBuilder.group(
  CanopyApi,
  "incidents",
  Effect.fn(function*(handlers) {
    const incidents = yield* Incidents
    return handlers.handleAll({
      list: ({ query }) => Effect.flatMap(orgId, (org) => incidents.list(org, query)),
      create: ({ payload }) => Effect.flatMap(orgId, (org) => incidents.create(org, payload)),
      get: ({ params }) => Effect.flatMap(orgId, (org) => incidents.get(org, params.id)),
      update: ({ params, payload }) => Effect.flatMap(orgId, (org) => incidents.update(org, params.id, payload)),
      remove: ({ params }) => Effect.flatMap(orgId, (org) => incidents.remove(org, params.id)),
      addUpdate: ({ params, payload }) => Effect.flatMap(orgId, (org) => incidents.addUpdate(org, params.id, payload))
    })
  })
)
