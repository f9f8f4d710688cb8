import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { CiRuns } from "../../../services/ci/CiRuns.ts"
import { CiSettings } from "../../../services/ci/CiSettings.ts"
import { Repositories } from "../../../services/git/Repositories.ts"
import { CanopyApi } from "../Api.ts"
import { ownOrg } from "../git/RepositoriesHandlers.ts"
import { CurrentPrincipal } from "../tenancy/Security.ts"

export const CiHandlers = HttpApiBuilder.group(
  CanopyApi,
  "ci",
  Effect.fn(function*(handlers) {
    const settings = yield* CiSettings
    const runs = yield* CiRuns
    const repos = yield* Repositories
    /** The live repository `{org}/{repo}` of the key's organization, else a 404. */
    const own = (params: { readonly org: string; readonly repo: string }) =>
      Effect.flatMap(ownOrg(params), (orgId) => repos.record(orgId, params.repo))
    const plan = Effect.map(CurrentPrincipal, (principal) => principal.org.plan)
    const sender = Effect.map(
      CurrentPrincipal,
      (principal) => ({ id: principal.user.id, name: principal.user.name ?? principal.user.username })
    )
    return handlers.handleAll({
      config: ({ params }) => Effect.flatMap(own(params), (repo) => settings.config(repo)),
      updateConfig: ({ params, payload }) =>
        Effect.gen(function*() {
          const repo = yield* own(params)
          return yield* settings.updateConfig(repo, yield* plan, payload)
        }),
      variables: ({ params }) => Effect.flatMap(own(params), (repo) => settings.variables(repo)),
      putVariable: ({ params, payload }) =>
        Effect.gen(function*() {
          const repo = yield* own(params)
          const { created, variable } = yield* settings.putVariable(repo, params.name, payload)
          return HttpServerResponse.jsonUnsafe(variable, { status: created ? 201 : 200 })
        }),
      removeVariable: ({ params }) => Effect.flatMap(own(params), (repo) => settings.removeVariable(repo, params.name)),
      trigger: ({ params, payload }) =>
        Effect.gen(function*() {
          const repo = yield* own(params)
          return yield* runs.trigger(repo, yield* plan, yield* sender, payload)
        }),
      runs: ({ params, query }) => Effect.flatMap(own(params), (repo) => runs.list(repo, query)),
      run: ({ params }) => Effect.flatMap(own(params), (repo) => runs.detail(repo, params.number)),
      cancel: ({ params }) => Effect.flatMap(own(params), (repo) => runs.cancel(repo, params.number)),
      rerun: ({ params }) =>
        Effect.gen(function*() {
          const repo = yield* own(params)
          return yield* runs.rerun(repo, yield* plan, params.number, yield* sender)
        }),
      log: ({ params }) => Effect.flatMap(own(params), (repo) => runs.log(repo, params.number, params.jobId))
    })
  })
)
