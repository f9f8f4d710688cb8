import { Effect, Option } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import type { ApiScope } from "../../../schemas/tenancy/Tenancy.ts"
import type { Pusher } from "../../../services/git/RefUpdates.ts"
import { type RepoRecord, Repositories } from "../../../services/git/Repositories.ts"
import { ApiKeys, type Principal } from "../../../services/tenancy/ApiKeys.ts"
import { errorResponse } from "../ErrorResponse.ts"
import { noteOrganization } from "../RequestState.ts"

/** A caller allowed to do what it asked on a repository. */
export interface GitAccess {
  readonly repo: RepoRecord
  readonly principal: Principal | null
}

const challenge = (message: string) =>
  errorResponse(401, "unauthorized", message).pipe(
    HttpServerResponse.setHeader("www-authenticate", `Basic realm="Canopy", charset="UTF-8"`)
  )

/** The password of an HTTP Basic credential (the username is ignored, GUIDE §8). */
const basicPassword = (header: string | undefined): Option.Option<string> => {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? "")
  if (match === null) return Option.none()
  const decoded = Buffer.from(match[1], "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  return colon < 0 ? Option.none() : Option.some(decoded.slice(colon + 1))
}

/** `/<org>/<repo>.git/…`: the repository part without its `.git` suffix. */
export const repoSlugOf = (segment: string) => segment.replace(/\.git$/i, "")

/**
 * Git over HTTP auth (GUIDE §8): Basic with an API key as password. Public repositories
 * fetch anonymously. Without credentials a private (or unknown) repository answers 401
 * with `WWW-Authenticate`, so git asks for them; with credentials, another organization's
 * private repository (or an unknown one) answers 404. Fetch needs `code:read`, push
 * `code:write`, and pushing always needs a key of the repository's organization.
 * Fails with the response to send.
 */
export const authorizeGit = (
  request: HttpServerRequest.HttpServerRequest,
  orgSlug: string,
  repoSegment: string,
  access: "read" | "write"
) =>
  Effect.gen(function*() {
    const repos = yield* Repositories
    const keys = yield* ApiKeys
    const password = basicPassword(request.headers.authorization)
    const repo = yield* repos.find(orgSlug, repoSlugOf(repoSegment))
    const notFound = errorResponse(404, "not_found", `Repository '${orgSlug}/${repoSlugOf(repoSegment)}' not found`)
    // A transferred repository's old clone path answers 301 to the new one (GUIDE §16), to
    // whoever could read it there: anyone when public, else a key of its new organization.
    const moved = Option.isNone(repo) ? yield* repos.redirect(orgSlug, repoSlugOf(repoSegment)) : Option.none()
    const redirectTo = (target: RepoRecord) => {
      const url = new URL(request.url, "http://canopy.invalid")
      const rest = url.pathname.split("/").slice(3).join("/")
      return HttpServerResponse.empty({ status: 301 }).pipe(
        HttpServerResponse.setHeader("location", `/${target.orgSlug}/${target.slug}.git/${rest}${url.search}`)
      )
    }
    if (Option.isNone(password)) {
      if (Option.isSome(moved) && moved.value.visibility === "public") {
        return yield* Effect.fail(redirectTo(moved.value))
      }
      if (Option.isSome(repo) && repo.value.visibility === "public" && access === "read") {
        return { repo: repo.value, principal: null } satisfies GitAccess
      }
      return yield* Effect.fail(challenge("Authentication required: use an API key as the password"))
    }
    const principal = yield* keys.authenticate(password.value).pipe(
      Effect.mapError(() => challenge("Invalid credentials"))
    )
    yield* noteOrganization(principal.org.id)
    if (Option.isSome(moved) && moved.value.orgId === principal.org.id) {
      return yield* Effect.fail(redirectTo(moved.value))
    }
    if (Option.isNone(repo)) return yield* Effect.fail(notFound)
    const own = principal.org.id === repo.value.orgId
    if (!own && !(repo.value.visibility === "public" && access === "read")) return yield* Effect.fail(notFound)
    const scope: ApiScope = access === "read" ? "code:read" : "code:write"
    if (!principal.scopes.includes(scope)) {
      return yield* Effect.fail(errorResponse(403, "forbidden", `This key lacks the '${scope}' scope`))
    }
    return { repo: repo.value, principal } satisfies GitAccess
  })

export const pusherOf = (principal: Principal | null): Pusher | null =>
  principal === null ? null : {
    id: principal.user.id,
    name: principal.user.name ?? principal.user.username,
    email: principal.user.email
  }

/** Turns an auth refusal (a response) into the answer, everything else into a 500 via the edge. */
export const refusalsAnswered = <E, R>(effect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.catchIf(
    effect,
    (error): error is E & HttpServerResponse.HttpServerResponse => HttpServerResponse.isHttpServerResponse(error),
    (response) => Effect.succeed(response)
  )
