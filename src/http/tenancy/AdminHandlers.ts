import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { RequestQuota } from "../../../services/ratelimits/RequestQuota.ts"
import { StatusCache } from "../../../services/status/StatusCache.ts"
import { ApiKeys } from "../../../services/tenancy/ApiKeys.ts"
import { OrganizationLogo } from "../../../services/tenancy/OrganizationLogo.ts"
import { Tenancy } from "../../../services/tenancy/Tenancy.ts"
import { CanopyApi } from "../Api.ts"

export const AdminHandlers = HttpApiBuilder.group(
  CanopyApi,
  "admin",
  Effect.fn(function*(handlers) {
    const tenancy = yield* Tenancy
    const keys = yield* ApiKeys
    const logos = yield* OrganizationLogo
    const statusCache = yield* StatusCache
    const quota = yield* RequestQuota
    return handlers.handleAll({
      listOrgs: () => Effect.map(tenancy.listOrganizations(), (orgs) => ({ orgs, count: orgs.length })),
      createOrg: ({ payload }) => tenancy.createOrganization(payload),
      updateOrg: Effect.fn(function*({ params, payload }) {
        const { logoUrl, ...rest } = payload
        if (logoUrl !== undefined && logoUrl !== null) yield* logos.check(logoUrl)
        let org = yield* tenancy.updateOrganization(params.slug, rest)
        if (logoUrl !== undefined) org = yield* logos.set(org.id, logoUrl)
        // Cached principals carry the plan, the status cache the name and logo: drop this
        // runner's now; `org.updated` reaches the others.
        yield* keys.evict({ orgId: org.id })
        yield* statusCache.invalidate(org.id)
        return org
      }),
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
