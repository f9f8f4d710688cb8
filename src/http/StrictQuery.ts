import { HttpApi } from "effect/http-api"
import { CanopyApi } from "./Api.ts"
import { errorResponse } from "./ErrorResponse.ts"

interface RouteQuery {
  readonly method: string
  readonly pattern: RegExp
  readonly hasQuery: boolean
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** A route path (`/api/v1/monitors/:id`, a trailing `*` for a tail) as a pattern matching one concrete path. */
const toPattern = (path: string) =>
  new RegExp(
    `^${
      path.split("/").map((segment) => segment === "*" ? ".*" : segment.startsWith(":") ? "[^/]+" : escape(segment))
        .join("/")
    }/?$`
  )

/** Each endpoint of the REST contract and whether it declares a query, read once from the HttpApi definition. */
const routes: ReadonlyArray<RouteQuery> = (() => {
  const found: Array<RouteQuery> = []
  HttpApi.reflect(CanopyApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      found.push({ method: endpoint.method, pattern: toPattern(endpoint.path), hasQuery: endpoint.query !== undefined })
    }
  })
  return found
})()

/**
 * Query parameters are as strict as body fields (GUIDE §4): an endpoint with a query
 * Schema refuses unknown parameters when decoding it (`QueryParseOptions` on the API); an
 * endpoint without one takes none, so any parameter sent to it is a 400 naming it here,
 * instead of being ignored (`?page=2` silently answering the first page again). Paths the
 * HttpApi does not serve (git, LFS, live, status pages, Sentry ingest) are left alone.
 */
export const unexpectedQuery = (method: string, path: string, search: string) => {
  const wanted = method === "HEAD" ? "GET" : method
  const matching = routes.filter((route) => route.method === wanted && route.pattern.test(path))
  if (matching.length === 0 || matching.some((route) => route.hasQuery)) return undefined
  const names = [...new Set(new URLSearchParams(search).keys())]
  if (names.length === 0) return undefined
  return errorResponse(
    400,
    "validation_error",
    `Unknown query parameter${names.length === 1 ? "" : "s"}: ${names.join(", ")}; this endpoint takes none`,
    { details: names.map((name) => ({ path: `query.${name}`, message: "Unknown query parameter" })) }
  )
}
