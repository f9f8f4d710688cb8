import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import type { IssuePerson } from "../../../schemas/issues/RepositoryIssues.ts"
import { Repositories } from "../../../services/git/Repositories.ts"
import { IssueComments } from "../../../services/issues/IssueComments.ts"
import { RepositoryIssues } from "../../../services/issues/RepositoryIssues.ts"
import { CanopyApi } from "../Api.ts"
import { ownOrg } from "../git/RepositoriesHandlers.ts"
import { CurrentPrincipal } from "../tenancy/Security.ts"

/** The key's user as issues name people. */
const actor = Effect.map(CurrentPrincipal, (principal): IssuePerson => ({
  id: principal.user.id,
  name: principal.user.name ?? principal.user.username
}))

export const RepositoryIssuesHandlers = HttpApiBuilder.group(
  CanopyApi,
  "repositoryIssues",
  Effect.fn(function*(handlers) {
    const repos = yield* Repositories
    const issues = yield* RepositoryIssues
    const comments = yield* IssueComments
    /** `{org}/{repo}`: a live repository of the key's organization, else 404. */
    const repoOf = (params: { readonly org: string; readonly repo: string }) =>
      Effect.flatMap(ownOrg(params), (orgId) => repos.record(orgId, params.repo))
    return handlers.handleAll({
      list: ({ params, query }) => Effect.flatMap(repoOf(params), (repo) => issues.list(repo, query)),
      create: ({ params, payload }) =>
        Effect.flatMap(Effect.all([repoOf(params), actor]), ([repo, author]) => issues.create(repo, author, payload)),
      get: ({ params }) => Effect.flatMap(repoOf(params), (repo) => issues.get(repo, params.number)),
      update: ({ params, payload }) =>
        Effect.flatMap(
          Effect.all([repoOf(params), actor]),
          ([repo, by]) => issues.update(repo, params.number, by, payload)
        ),
      comments: ({ params }) => Effect.flatMap(repoOf(params), (repo) => comments.list(repo, params.number)),
      comment: ({ params, payload }) =>
        Effect.flatMap(
          Effect.all([repoOf(params), actor]),
          ([repo, author]) => comments.create(repo, params.number, author, payload.body)
        )
    })
  })
)
