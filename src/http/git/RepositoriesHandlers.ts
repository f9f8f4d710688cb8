import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { NotFound } from "../../../schemas/platform/Errors.ts"
import { RepoReader } from "../../../services/git/RepoReader.ts"
import { Repositories } from "../../../services/git/Repositories.ts"
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
    return handlers.handleAll({
      list: ({ query }) => Effect.flatMap(CurrentPrincipal, (principal) => repos.list(principal.org.id, query)),
      create: ({ payload }) => Effect.flatMap(CurrentPrincipal, (principal) => repos.create(principal.org, payload)),
      get: ({ params }) => Effect.flatMap(ownOrg(params), (org) => repos.get(org, params.repo)),
      update: ({ params, payload }) => Effect.flatMap(ownOrg(params), (org) => repos.update(org, params.repo, payload)),
      remove: ({ params }) => Effect.flatMap(ownOrg(params), (org) => repos.remove(org, params.repo)),
      branches: ({ params, query }) => Effect.flatMap(ownOrg(params), (org) => repos.branches(org, params.repo, query)),
      tags: ({ params, query }) => Effect.flatMap(ownOrg(params), (org) => repos.tags(org, params.repo, query)),
      tree: ({ params }) => Effect.flatMap(ownOrg(params), (org) => reader.tree(org, params.repo, params["*"])),
      blob: ({ params }) => Effect.flatMap(ownOrg(params), (org) => reader.blob(org, params.repo, params["*"])),
      commits: ({ params, query }) => Effect.flatMap(ownOrg(params), (org) => reader.commits(org, params.repo, query))
    })
  })
)
