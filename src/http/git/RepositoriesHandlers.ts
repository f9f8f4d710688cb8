import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { NotFound } from "../../../schemas/platform/Errors.ts"
import { RepoReader } from "../../../services/git/RepoReader.ts"
import { Repositories } from "../../../services/git/Repositories.ts"
import { RepositoryLifecycle } from "../../../services/git/RepositoryLifecycle.ts"
import { CanopyApi } from "../Api.ts"
import { CurrentPrincipal } from "../tenancy/Security.ts"

/** The caller's organization id, provided the path names it; another organization is a 404. */
export const ownOrg = (params: { readonly org: string; readonly repo: string }) =>
  Effect.flatMap(CurrentPrincipal, (principal) =>
    principal.org.slug === params.org
      ? Effect.succeed(principal.org.id)
      : Effect.fail(new NotFound({ message: `Repository '${params.org}/${params.repo}' not found` })))

export const RepositoriesHandlers = HttpApiBuilder.group(
  CanopyApi,
  "repositories",
  Effect.fn(function*(handlers) {
    const repos = yield* Repositories
    const reader = yield* RepoReader
    const lifecycle = yield* RepositoryLifecycle
    const sender = Effect.map(CurrentPrincipal, (p) => ({ id: p.user.id, name: p.user.name ?? p.user.username }))
    return handlers.handleAll({
      list: ({ query }) => Effect.flatMap(CurrentPrincipal, (principal) => repos.list(principal.org.id, query)),
      create: ({ payload }) => Effect.flatMap(CurrentPrincipal, (principal) => repos.create(principal.org, payload)),
      get: ({ params }) => Effect.flatMap(ownOrg(params), (org) => repos.get(org, params.repo)),
      update: ({ params, payload }) =>
        Effect.gen(function*() {
          const org = yield* ownOrg(params)
          return yield* lifecycle.update(org, params.repo, payload, yield* sender)
        }),
      remove: ({ params }) =>
        Effect.gen(function*() {
          const org = yield* ownOrg(params)
          return yield* lifecycle.remove(org, params.repo, yield* sender)
        }),
      branches: ({ params, query }) => Effect.flatMap(ownOrg(params), (org) => repos.branches(org, params.repo, query)),
      tags: ({ params, query }) => Effect.flatMap(ownOrg(params), (org) => repos.tags(org, params.repo, query)),
      tree: ({ params }) => Effect.flatMap(ownOrg(params), (org) => reader.tree(org, params.repo, params["*"])),
      blob: ({ params }) => Effect.flatMap(ownOrg(params), (org) => reader.blob(org, params.repo, params["*"])),
      commits: ({ params, query }) => Effect.flatMap(ownOrg(params), (org) => reader.commits(org, params.repo, query))
    })
  })
)
