import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { parseIsoTimestamp } from "../../../schemas/monitors/Monitors.ts"
import { Monitors } from "../../../services/monitors/Monitors.ts"
import { CanopyApi } from "../Api.ts"
import { CurrentPrincipal } from "../tenancy/Security.ts"

const orgId = CurrentPrincipal.pipe(Effect.map((principal) => principal.org.id))

export const MonitorsHandlers = HttpApiBuilder.group(
  CanopyApi,
  "monitors",
  Effect.fn(function*(handlers) {
    const monitors = yield* Monitors
    return handlers.handleAll({
      list: ({ query }) => Effect.flatMap(orgId, (org) => monitors.list(org, query)),
      create: ({ payload }) => Effect.flatMap(orgId, (org) => monitors.create(org, payload)),
      get: ({ params }) => Effect.flatMap(orgId, (org) => monitors.get(org, params.id)),
      update: ({ params, payload }) => Effect.flatMap(orgId, (org) => monitors.update(org, params.id, payload)),
      remove: ({ params }) => Effect.flatMap(orgId, (org) => monitors.remove(org, params.id)),
      heartbeats: ({ params, query }) =>
        Effect.flatMap(orgId, (org) =>
          monitors.heartbeats(org, params.id, {
            from: query.from === undefined ? undefined : parseIsoTimestamp(query.from),
            to: query.to === undefined ? undefined : parseIsoTimestamp(query.to),
            limit: query.limit
          }))
    })
  })
)
