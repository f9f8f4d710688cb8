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
    }).pipe(Effect.scoped))
})
