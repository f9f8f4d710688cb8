import SwaggerParser from "@apidevtools/swagger-parser"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import openapiTS, { astToString } from "openapi-typescript"
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
      const notLists = new Set([
        "GET /api/v1/code/repos/{org}/{repo}/codeowners/errors",
        // A CI run's detail is `{run, jobs, testSummary}` (GUIDE §14): a resource holding its jobs.
        "GET /api/v1/code/repos/{org}/{repo}/ci/runs/{number}"
      ])
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

/** The document as client generators read it: complete, valid, and generating. */
describe("GET /openapi.json for generators", () => {
  it.live(
    "lists every public route, names every parameter, passes a validator and generates TypeScript",
    () =>
      Effect.gen(function*() {
        const app = yield* startApp()
        const spec = (yield* request(`${app.baseUrl}/openapi.json`)).body

        // The raw routes (outside HttpApi) are documented too.
        const routes = new Set(
          Object.entries<Record<string, unknown>>(spec.paths).flatMap(([path, item]) =>
            Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`)
          )
        )
        for (
          const route of [
            "POST /api/v1/observe/ingest",
            "GET /api/v1/widget/{slug}",
            "GET /api/v1/feed/{slug}",
            "GET /api/v1/badge/{slug}/{monitorId}",
            "GET /api/v1/subscribe/confirm",
            "GET /api/v1/subscribe/unsubscribe",
            "POST /api/v1/subscribe/unsubscribe",
            "POST /api/{projectId}/envelope/",
            "POST /api/{projectId}/store/",
            "GET /api/v1/live",
            "GET /api/v1/live/{slug}",
            "GET /status/{slug}"
          ]
        ) expect(routes, route).toContain(route)
        // Every raw route under /api/ in the sources is one of them.
        const sources = Fs.readdirSync(Path.resolve(import.meta.dirname, "../../src/http"), { recursive: true })
          .filter((file) => String(file).endsWith(".ts"))
          .map((file) => Fs.readFileSync(Path.resolve(import.meta.dirname, "../../src/http", String(file)), "utf8"))
          .join("\n")
        const raw = [...sources.matchAll(/HttpRouter\.add\(\s*"(GET|POST|PUT|PATCH|DELETE)",\s*"(\/api\/[^"]+)"/g)]
          .map(([, method, path]) => `${method} ${path.replace(/:(\w+)/g, "{$1}")}`)
        expect(raw.length).toBeGreaterThan(5)
        for (const route of raw) expect(routes, route).toContain(route)

        // Parameters have names generators can use (the tree and blob tails were `*`).
        const text = JSON.stringify(spec)
        expect(text).not.toContain("{*}")
        expect(Object.keys(spec.paths).filter((path) => path.includes("*"))).toEqual([])
        const names = Object.values<Record<string, any>>(spec.paths).flatMap((item) =>
          Object.values<any>(item).flatMap((operation) => (operation.parameters ?? []).map((p: any) => p.name))
        )
        for (const name of names) expect(name).toMatch(/^[A-Za-z_][A-Za-z0-9_]*$/)
        expect(routes).toContain("GET /api/v1/code/repos/{org}/{repo}/tree/{refAndPath}")

        // A real validator, then a real generator.
        yield* Effect.promise(() => SwaggerParser.validate(structuredClone(spec)))
        const generated = astToString(yield* Effect.promise(() => openapiTS(structuredClone(spec))))
        expect(generated).toContain(`"/api/v1/observe/ingest"`)
        expect(generated).toContain(`"/api/v1/code/repos/{org}/{repo}/blob/{refAndPath}"`)
        expect(generated).toMatch(/refAndPath: string/)
      }).pipe(Effect.scoped),
    120_000
  )
})
