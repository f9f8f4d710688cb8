import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Repositories } from "../../../services/git/Repositories.ts"
import { AuditLog } from "../../../services/protection/AuditLog.ts"
import { CommitStatuses } from "../../../services/protection/CommitStatuses.ts"
import { GpgKeys } from "../../../services/protection/GpgKeys.ts"
import { ProtectionRules } from "../../../services/protection/ProtectionRules.ts"
import { CanopyApi } from "../Api.ts"
import { ownOrg } from "../git/RepositoriesHandlers.ts"
import { CurrentPrincipal } from "../tenancy/Security.ts"

/** The live repository `{org}/{repo}` of the key's organization, else a 404. */
const ownRepo = Effect.fnUntraced(function*(params: { readonly org: string; readonly repo: string }) {
  const orgId = yield* ownOrg(params)
  return yield* (yield* Repositories).record(orgId, params.repo)
})

export const BranchProtectionHandlers = HttpApiBuilder.group(
  CanopyApi,
  "branchProtection",
  Effect.fn(function*(handlers) {
    const rules = yield* ProtectionRules
    const repos = yield* Repositories
    const own = (params: { readonly org: string; readonly repo: string }) =>
      ownRepo(params).pipe(Effect.provideService(Repositories, repos))
    return handlers.handleAll({
      list: ({ params }) => Effect.flatMap(own(params), (repo) => rules.list(repo)),
      create: ({ params, payload }) => Effect.flatMap(own(params), (repo) => rules.create(repo, payload)),
      get: ({ params }) => Effect.flatMap(own(params), (repo) => rules.get(repo, params.ruleId)),
      update: ({ params, payload }) =>
        Effect.flatMap(own(params), (repo) => rules.update(repo, params.ruleId, payload)),
      remove: ({ params }) => Effect.flatMap(own(params), (repo) => rules.remove(repo, params.ruleId))
    })
  })
)

export const CommitStatusesHandlers = HttpApiBuilder.group(
  CanopyApi,
  "commitStatuses",
  Effect.fn(function*(handlers) {
    const statuses = yield* CommitStatuses
    const repos = yield* Repositories
    const own = (params: { readonly org: string; readonly repo: string }) =>
      ownRepo(params).pipe(Effect.provideService(Repositories, repos))
    return handlers.handleAll({
      create: ({ params, payload }) =>
        Effect.gen(function*() {
          const repo = yield* own(params)
          const principal = yield* CurrentPrincipal
          return yield* statuses.create(repo, params.sha, principal.user.id, payload)
        }),
      list: ({ params }) => Effect.flatMap(own(params), (repo) => statuses.list(repo, params.sha))
    })
  })
)

export const GpgKeysHandlers = HttpApiBuilder.group(
  CanopyApi,
  "gpgKeys",
  Effect.fn(function*(handlers) {
    const keys = yield* GpgKeys
    const user = Effect.map(CurrentPrincipal, (principal) => principal.user.id)
    return handlers.handleAll({
      list: () => Effect.flatMap(user, (userId) => keys.list(userId)),
      create: ({ payload }) => Effect.flatMap(user, (userId) => keys.add(userId, payload)),
      get: ({ params }) => Effect.flatMap(user, (userId) => keys.get(userId, params.id)),
      remove: ({ params }) => Effect.flatMap(user, (userId) => keys.remove(userId, params.id))
    })
  })
)

export const AuditHandlers = HttpApiBuilder.group(
  CanopyApi,
  "audit",
  Effect.fn(function*(handlers) {
    const audit = yield* AuditLog
    return handlers.handleAll({
      list: ({ query }) => Effect.flatMap(CurrentPrincipal, (principal) => audit.list(principal.org, query))
    })
  })
)
