import { Effect, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Repositories } from "../../../services/git/Repositories.ts"
import { ApiKeys } from "../../../services/tenancy/ApiKeys.ts"

const repoPath = /^\/api\/v1\/code\/repos\/([^/?]+)\/([^/?]+)(\/[^?]*)?(\?.*)?$/

/**
 * A transferred repository's old API paths redirect to the new ones until the name is used
 * again (GUIDE §16). Only a 404 of a repository path is looked at, so other requests pay
 * nothing; the redirect is for keys of the organization that holds the repository now (a
 * key of the old organization keeps its 404: the repository is no longer its own). GET and
 * HEAD get 301; other methods 308, which keeps the method and body.
 */
export const RepoRedirects = HttpRouter.middleware(
  Effect.gen(function*() {
    const repos = yield* Repositories
    const keys = yield* ApiKeys
    return (httpApp) =>
      Effect.flatMap(httpApp, (response) => {
        if (response.status !== 404) return Effect.succeed(response)
        return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
          const match = repoPath.exec(request.url)
          const bearer = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? "")
          if (match === null || bearer === null) return Effect.succeed(response)
          const [, org, repo, rest, query] = match
          return Effect.gen(function*() {
            const moved = yield* repos.redirect(decodeURIComponent(org), decodeURIComponent(repo))
            if (Option.isNone(moved)) return response
            const principal = yield* Effect.option(keys.authenticate(bearer[1]))
            if (Option.isNone(principal) || principal.value.org.id !== moved.value.orgId) return response
            const status = request.method === "GET" || request.method === "HEAD" ? 301 : 308
            const location = `/api/v1/code/repos/${moved.value.orgSlug}/${moved.value.slug}${rest ?? ""}${query ?? ""}`
            return HttpServerResponse.empty({ status }).pipe(HttpServerResponse.setHeader("location", location))
          })
        })
      })
  }),
  { global: true }
)
