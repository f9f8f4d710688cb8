import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { NotFound } from "../../../schemas/platform/Errors.ts"
import { RepositoryLifecycle } from "../../../services/git/RepositoryLifecycle.ts"
import { StorageReport } from "../../../services/git/StorageReport.ts"
import { Transfers } from "../../../services/git/Transfers.ts"
import { CanopyApi } from "../Api.ts"
import { CurrentPrincipal } from "../tenancy/Security.ts"

const actor = Effect.map(CurrentPrincipal, (p) => ({ userId: p.user.id, orgId: p.org.id, role: p.role }))

export const LifecycleHandlers = HttpApiBuilder.group(
  CanopyApi,
  "lifecycle",
  Effect.fn(function*(handlers) {
    const lifecycle = yield* RepositoryLifecycle
    const transfers = yield* Transfers
    const storage = yield* StorageReport
    return handlers.handleAll({
      trash: () => Effect.flatMap(CurrentPrincipal, (p) => lifecycle.trash(p.org.id)),
      restore: ({ params, payload }) =>
        Effect.flatMap(CurrentPrincipal, (p) => lifecycle.restore(p.org.id, params.id, payload.name)),
      purge: ({ params }) => Effect.flatMap(CurrentPrincipal, (p) => lifecycle.purge(p.org.id, params.id)),
      storage: () => Effect.flatMap(CurrentPrincipal, (p) => storage.usage(p.org.id)),
      transfer: ({ params, payload }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          if (principal.org.slug !== params.org) {
            return yield* new NotFound({ message: `Repository '${params.org}/${params.repo}' not found` })
          }
          return yield* transfers.request(yield* actor, params.repo, payload.targetOrg)
        }),
      transfers: () => Effect.flatMap(CurrentPrincipal, (p) => transfers.list(p.org.id)),
      accept: ({ params }) => Effect.flatMap(actor, (a) => transfers.accept(a, params.id)),
      decline: ({ params }) => Effect.flatMap(actor, (a) => transfers.decline(a, params.id))
    })
  })
)
