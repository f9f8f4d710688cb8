import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { RequestQuota } from "../../../services/ratelimits/RequestQuota.ts"
import { ApiKeys } from "../../../services/tenancy/ApiKeys.ts"
import { Tenancy } from "../../../services/tenancy/Tenancy.ts"
import { CanopyApi } from "../Api.ts"

export const AdminHandlers = HttpApiBuilder.group(
  CanopyApi,
  "admin",
  Effect.fn(function*(handlers) {
    const tenancy = yield* Tenancy
    const keys = yield* ApiKeys
    const quota = yield* RequestQuota
    return handlers.handleAll({
      listOrgs: () => Effect.map(tenancy.listOrganizations(), (orgs) => ({ orgs, count: orgs.length })),
      createOrg: ({ payload }) => tenancy.createOrganization(payload),
      // Cached principals carry the plan: drop this runner's now; `org.updated` reaches the others.
      updateOrg: ({ params, payload }) =>
        tenancy.updateOrganization(params.slug, payload).pipe(Effect.tap((org) => keys.evict({ orgId: org.id }))),
      orgQuota: Effect.fn(function*({ params }) {
        const org = yield* tenancy.findOrganization(params.slug)
        const result = yield* quota.read(org.id, org.requestsPerMinute)
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
