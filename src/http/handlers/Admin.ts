import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ApiKeys } from "../../../services/platform/ApiKeys.ts"
import { Tenancy } from "../../../services/platform/Tenancy.ts"
import { Organization } from "../../entities/Organization.ts"
import { CanopyApi } from "../api/Api.ts"

export const AdminHandlers = HttpApiBuilder.group(
  CanopyApi,
  "admin",
  Effect.fn(function*(handlers) {
    const tenancy = yield* Tenancy
    const keys = yield* ApiKeys
    const organization = yield* Organization.client
    return handlers.handleAll({
      listOrgs: () => Effect.map(tenancy.listOrganizations(), (orgs) => ({ orgs, count: orgs.length })),
      createOrg: ({ payload }) => tenancy.createOrganization(payload),
      // Cached principals carry the plan: drop this runner's now; `org.updated` reaches the others.
      updateOrg: ({ params, payload }) =>
        tenancy.updateOrganization(params.slug, payload).pipe(Effect.tap((org) => keys.evict({ orgId: org.id }))),
      orgQuota: Effect.fn(function*({ params }) {
        const org = yield* tenancy.findOrganization(params.slug)
        const result = yield* organization(org.id).Lease({ limit: org.requestsPerMinute, want: 0 }).pipe(Effect.orDie)
        return {
          limit: org.requestsPerMinute,
          used: result.used,
          remaining: result.remaining,
          reset: result.reset,
          runner: result.runner
        }
      }),
      addUser: ({ params, payload }) => tenancy.addMember(params.slug, payload),
      createKey: ({ params, payload }) => keys.create(params.slug, payload),
      revokeKey: ({ params }) => Effect.asVoid(keys.revoke(params.id))
    })
  })
)
