import { HttpApi } from "effect/http-api"
import { CanopyApi } from "./Api.ts"

interface RouteMethods {
  readonly pattern: RegExp
  readonly methods: Set<string>
}

/** A route path (`/api/v1/monitors/:id`) as a pattern matching one concrete path. */
const toPattern = (path: string) =>
  new RegExp(`^${path.split("/").map((segment) => segment.startsWith(":") ? "[^/]+" : escape(segment)).join("/")}/?$`)

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** The methods of each path of the REST contract, read once from the HttpApi definition. */
const routes: ReadonlyArray<RouteMethods> = (() => {
  const byPath = new Map<string, Set<string>>()
  HttpApi.reflect(CanopyApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      const methods = byPath.get(endpoint.path) ?? new Set<string>()
      methods.add(endpoint.method)
      if (endpoint.method === "GET") methods.add("HEAD")
      byPath.set(endpoint.path, methods)
    }
  })
  return [...byPath].map(([path, methods]) => ({ pattern: toPattern(path), methods }))
})()

/**
 * The methods a known path answers, for a request no route matched: non-empty means the
 * path exists and the method is wrong (405 with `Allow`), empty means an unknown path (404).
 */
export const allowedMethods = (path: string): ReadonlyArray<string> => {
  const allowed = new Set<string>()
  for (const route of routes) {
    if (route.pattern.test(path)) { for (const method of route.methods) allowed.add(method) }
  }
  return [...allowed].sort()
}
