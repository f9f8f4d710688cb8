import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Repositories } from "../../../services/git/Repositories.ts"
import { CodeOwners } from "../../../services/pulls/CodeOwners.ts"
import { CanopyApi } from "../Api.ts"
import { ownOrg } from "../git/RepositoriesHandlers.ts"

export const CodeOwnersHandlers = HttpApiBuilder.group(
  CanopyApi,
  "codeOwners",
  Effect.fn(function*(handlers) {
    const repos = yield* Repositories
    const codeOwners = yield* CodeOwners
    return handlers.handleAll({
      errors: ({ params, query }) =>
        Effect.gen(function*() {
          const repo = yield* repos.record(yield* ownOrg(params), params.repo)
          return { errors: yield* codeOwners.errors(repo, query.ref ?? repo.defaultBranch) }
        })
    })
  })
)
