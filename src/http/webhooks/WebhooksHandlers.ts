import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import type { NotFound } from "../../../schemas/platform/Errors.ts"
import type { UpdateWebhook } from "../../../schemas/webhooks/Webhooks.ts"
import { Repositories } from "../../../services/git/Repositories.ts"
import { Deliveries } from "../../../services/webhooks/Deliveries.ts"
import { FanOut } from "../../../services/webhooks/FanOut.ts"
import type { PayloadRepository } from "../../../services/webhooks/Payloads.ts"
import { Webhooks, type WebhookScope } from "../../../services/webhooks/Webhooks.ts"
import { CanopyApi } from "../Api.ts"
import { ownOrg } from "../git/RepositoriesHandlers.ts"
import { CurrentPrincipal } from "../tenancy/Security.ts"

/** The webhooks' owner named by the path: its scope, and the repository for ping payloads. */
interface Owner {
  readonly scope: WebhookScope
  readonly repository?: PayloadRepository
}

type ListDeliveries = Parameters<Deliveries["Service"]["list"]>[1]

/** The handlers shared by organization and repository webhooks, given how a path names the owner. */
const webhookHandlers = Effect.fnUntraced(function*<P, R>(owner: (params: P) => Effect.Effect<Owner, NotFound, R>) {
  const webhooks = yield* Webhooks
  const deliveries = yield* Deliveries
  const fanOut = yield* FanOut
  type WithId = { readonly params: P & { readonly id: string } }
  type WithDelivery = { readonly params: P & { readonly id: string; readonly deliveryId: string } }
  return {
    list: ({ params }: { readonly params: P }) => Effect.flatMap(owner(params), ({ scope }) => webhooks.list(scope)),
    create: ({ params, payload }: { readonly params: P; readonly payload: Parameters<typeof webhooks.create>[1] }) =>
      Effect.flatMap(owner(params), ({ scope }) => webhooks.create(scope, payload)),
    get: ({ params }: WithId) => Effect.flatMap(owner(params), ({ scope }) => webhooks.get(scope, params.id)),
    update: ({ params, payload }: WithId & { readonly payload: UpdateWebhook }) =>
      Effect.flatMap(owner(params), ({ scope }) => webhooks.update(scope, params.id, payload)),
    remove: ({ params }: WithId) => Effect.flatMap(owner(params), ({ scope }) => webhooks.remove(scope, params.id)),
    test: ({ params }: WithId) =>
      Effect.flatMap(
        owner(params),
        ({ repository, scope }) => Effect.map(fanOut.ping(scope, params.id, repository), (delivery) => ({ delivery }))
      ),
    deliveries: ({ params, query }: WithId & { readonly query: ListDeliveries }) =>
      Effect.flatMap(
        owner(params),
        ({ scope }) => Effect.andThen(webhooks.get(scope, params.id), deliveries.list(params.id, query))
      ),
    delivery: ({ params }: WithDelivery) =>
      Effect.flatMap(
        owner(params),
        ({ scope }) => Effect.andThen(webhooks.get(scope, params.id), deliveries.get(params.id, params.deliveryId))
      ),
    redeliver: ({ params }: WithDelivery) =>
      Effect.flatMap(
        owner(params),
        ({ scope }) => Effect.map(fanOut.redeliver(scope, params.id, params.deliveryId), (delivery) => ({ delivery }))
      )
  }
})

export const WebhooksHandlers = HttpApiBuilder.group(
  CanopyApi,
  "webhooks",
  Effect.fn(function*(handlers) {
    const shared = yield* webhookHandlers((_: unknown) =>
      Effect.map(CurrentPrincipal, (principal): Owner => ({ scope: { orgId: principal.org.id, repoId: null } }))
    )
    return handlers.handleAll(shared)
  })
)

/** Repository webhooks: `{org}/{repo}` must be a live repository of the key's organization, else 404. */
export const RepoWebhooksHandlers = HttpApiBuilder.group(
  CanopyApi,
  "repoWebhooks",
  Effect.fn(function*(handlers) {
    const repos = yield* Repositories
    const shared = yield* webhookHandlers((params: { readonly org: string; readonly repo: string }) =>
      Effect.flatMap(ownOrg(params), (orgId) =>
        Effect.map(repos.get(orgId, params.repo), (repo): Owner => ({
          scope: { orgId, repoId: repo.id },
          repository: { id: repo.id, name: repo.name, fullName: repo.fullName }
        })))
    )
    return handlers.handleAll(shared)
  })
)
