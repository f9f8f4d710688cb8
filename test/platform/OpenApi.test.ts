import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import pkg from "../../package.json" with { type: "json" }
import { request, startApp } from "../support/app.ts"

/** The OpenAPI document a running Canopy serves, read as a client generator would. */
describe("GET /openapi.json", () => {
  it.live("documents every operation, names the package version, and tells the truth about numbers", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const response = yield* request(`${app.baseUrl}/openapi.json`)
      expect(response.status).toBe(200)
      const spec = response.body
      expect(spec.info.version).toBe(pkg.version)

      const operations = Object.entries<Record<string, any>>(spec.paths).flatMap(([path, item]) =>
        Object.entries(item).map(([method, operation]) => ({ route: `${method.toUpperCase()} ${path}`, operation }))
      )
      expect(operations.length).toBeGreaterThan(15)
      const undocumented = operations.filter(({ operation }) =>
        typeof operation.summary !== "string" || operation.summary === "" ||
        typeof operation.description !== "string" || operation.description === ""
      ).map(({ route }) => route)
      expect(undocumented).toEqual([])

      // JSON numbers are finite, and integers carry only their real bounds.
      const text = JSON.stringify(spec)
      expect(text).not.toMatch(/"(NaN|Infinity|-Infinity)"/)
      expect(text).not.toContain(String(Number.MAX_SAFE_INTEGER))
      const createMonitorBody = spec.paths["/api/v1/monitors"].post.requestBody.content["application/json"]
      const createMonitor = createMonitorBody.schema
      const resolved = createMonitor.$ref === undefined
        ? createMonitor
        : spec.components.schemas[createMonitor.$ref.split("/").pop()]
      expect(resolved.properties.frequency).toMatchObject({ type: "integer", minimum: 60, maximum: 3600 })
      expect(resolved.additionalProperties).toBe(false)
      // The main bodies carry examples.
      expect(createMonitorBody.examples.example1.value).toMatchObject({ name: "Homepage", url: "https://example.com/" })
      expect(spec.paths["/api/v1/admin/orgs"].post.requestBody.content["application/json"].examples.example1.value)
        .toEqual({ slug: "acme", name: "Acme Inc", plan: "pro" })

      // GUIDE §4: a list answers `{<plural>: [...], count}`. A list is a GET whose answer holds an
      // array of objects; the exceptions are resources that contain a list (a tree's entries, a
      // commit's statuses have `count` anyway) and GitHub-shaped answers named here.
      const resolve = (schema: any): any =>
        schema?.$ref === undefined ? schema : resolve(spec.components.schemas[schema.$ref.split("/").pop()])
      const notLists = new Set(["GET /api/v1/code/repos/{org}/{repo}/codeowners/errors"])
      const listsWithoutCount = operations.flatMap(({ operation, route }) => {
        if (!route.startsWith("GET ") || notLists.has(route)) return []
        const schema = resolve(operation.responses?.["200"]?.content?.["application/json"]?.schema)
        if (schema?.type !== "object") return []
        const arrays = Object.entries<any>(schema.properties ?? {}).filter(([, property]) => {
          const resolved = resolve(property)
          return resolved?.type === "array" && resolve(resolved.items)?.type === "object"
        })
        const isList = arrays.length === 1 && Object.keys(schema.properties).length <= 3
        return isList && resolve(schema.properties.count)?.type !== "integer" ? [route] : []
      })
      expect(listsWithoutCount).toEqual([])
    }).pipe(Effect.scoped))
})
