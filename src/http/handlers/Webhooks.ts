import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Deliveries } from "../../../services/webhooks/Deliveries.ts"
import { FanOut } from "../../../services/webhooks/FanOut.ts"
import { Webhooks, type WebhookScope } from "../../../services/webhooks/Webhooks.ts"
import { CanopyApi } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/Security.ts"

const orgScope = CurrentPrincipal.pipe(
  Effect.map((principal): WebhookScope => ({ orgId: principal.org.id, repoId: null }))
)

export const WebhooksHandlers = HttpApiBuilder.group(
  CanopyApi,
  "webhooks",
  Effect.fn(function*(handlers) {
    const webhooks = yield* Webhooks
    const deliveries = yield* Deliveries
    const fanOut = yield* FanOut
    return handlers.handleAll({
      list: () => Effect.flatMap(orgScope, (scope) => webhooks.list(scope)),
      create: ({ payload }) => Effect.flatMap(orgScope, (scope) => webhooks.create(scope, payload)),
      get: ({ params }) => Effect.flatMap(orgScope, (scope) => webhooks.get(scope, params.id)),
      update: ({ params, payload }) => Effect.flatMap(orgScope, (scope) => webhooks.update(scope, params.id, payload)),
      remove: ({ params }) => Effect.flatMap(orgScope, (scope) => webhooks.remove(scope, params.id)),
      test: ({ params }) =>
        Effect.flatMap(orgScope, (scope) => Effect.map(fanOut.ping(scope, params.id), (delivery) => ({ delivery }))),
      deliveries: ({ params, query }) =>
        Effect.flatMap(
          orgScope,
          (scope) => Effect.andThen(webhooks.get(scope, params.id), deliveries.list(params.id, query))
        ),
      delivery: ({ params }) =>
        Effect.flatMap(
          orgScope,
          (scope) => Effect.andThen(webhooks.get(scope, params.id), deliveries.get(params.id, params.deliveryId))
        ),
      redeliver: ({ params }) =>
        Effect.flatMap(
          orgScope,
          (scope) => Effect.map(fanOut.redeliver(scope, params.id, params.deliveryId), (delivery) => ({ delivery }))
        )
    })
  })
)
