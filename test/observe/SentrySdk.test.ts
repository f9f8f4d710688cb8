import { expect, layer } from "@effect/vitest"
import * as Sentry from "@sentry/node"
import { Context, Effect, Layer } from "effect"
import { gzipSync } from "node:zlib"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
import { errorEvent } from "./support.ts"

/** The real `@sentry/node` SDK, pointed at Canopy with the DSN that `GET /api/v1/me` shows. */
class TestApp extends Context.Service<TestApp, { readonly baseUrl: string }>()("test/observe/SentryApp") {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl })))

layer(TestAppLive, { excludeTestServices: true, timeout: 120_000 })("Sentry SDK compatibility", (it) => {
  it.effect("an exception and a transaction sent by @sentry/node show up through the API", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const { key, org } = yield* bootstrapOrg(baseUrl, { slug: "sentry-sdk", plan: "enterprise" })
      const me = yield* request(`${baseUrl}/api/v1/me`, { token: key })
      expect(me.body.sentryDsn).toBe(`http://${key}@localhost/${org.projectId}`)
      expect(me.body.dsn).toBe(`http://${key}@localhost/sentry-sdk`)
      // The test server listens on a random port that BASE_URL does not know.
      const dsn = me.body.sentryDsn.replace("@localhost", `@${new URL(baseUrl).host}`)

      const eventId = yield* Effect.promise(async () => {
        Sentry.init({
          dsn,
          release: "shop@2.0.0",
          environment: "staging",
          tracesSampleRate: 1,
          // Canopy runs in this process: do not trace its own HTTP server and client.
          integrations: (defaults) =>
            defaults.filter((integration) => !["Http", "NodeFetch"].includes(integration.name))
        })
        const id = Sentry.captureException(new TypeError("Cart 1234 has no items"))
        Sentry.startSpan({ name: "GET /checkout", op: "http.server" }, () => {
          Sentry.startSpan({ name: "SELECT carts", op: "db" }, () => undefined)
        })
        if (!await Sentry.flush(20_000)) throw new Error("the SDK did not flush")
        await Sentry.close(5_000)
        return id
      })

      const issues = yield* request(`${baseUrl}/api/v1/observe/issues`, { token: key })
      expect(issues.body.count).toBe(1)
      expect(issues.body.issues[0]).toMatchObject({
        title: "TypeError: Cart 1234 has no items",
        type: "TypeError",
        firstRelease: "shop@2.0.0",
        environments: ["staging"]
      })
      // The SDK's own event id finds the event.
      const event = yield* request(`${baseUrl}/api/v1/observe/events/${eventId}`, { token: key })
      expect(event.status).toBe(200)
      expect(event.body.data.exception.stacktrace.frames.length).toBeGreaterThan(3)
      expect(event.body.data.sdk.name).toBe("sentry.javascript.node")
      // What the SDK sent about where it ran and the code around each frame is kept.
      expect(event.body.data.contexts.runtime).toMatchObject({ name: "node", version: process.version })
      expect(event.body.data.contexts.os.name).toEqual(expect.any(String))
      expect(event.body.data.contexts.trace.trace_id).toMatch(/^[0-9a-f]{32}$/)
      const withSource = event.body.data.exception.stacktrace.frames.filter((frame: any) =>
        typeof frame.context_line === "string"
      )
      expect(withSource.length).toBeGreaterThan(0)
      expect(withSource[0].pre_context).toEqual(expect.any(Array))
      expect(withSource[0].post_context).toEqual(expect.any(Array))

      // The transaction and its child span arrive as spans (counted on the release).
      const release = yield* request(`${baseUrl}/api/v1/observe/releases/shop@2.0.0`, { token: key })
      expect(release.body).toMatchObject({ events: 1, errors: 1, spans: 2, errorSpans: 0 })
      const stats = yield* request(`${baseUrl}/api/v1/stats/performance?name=${encodeURIComponent("GET /checkout")}`, {
        token: key
      })
      expect(stats.status).toBe(200)
      expect(stats.body).toMatchObject({ totalSpans: 1, errorRate: 0 })
    }))

  it.effect("store endpoint with ?sentry_key= and gzip; CORS; a key of another project is refused", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const a = yield* bootstrapOrg(baseUrl, { slug: "sentry-a", plan: "enterprise" })
      const b = yield* bootstrapOrg(baseUrl, { slug: "sentry-b", plan: "enterprise" })
      const store = (projectId: number, sentryKey: string) =>
        Effect.promise(async () => {
          const response = await fetch(`${baseUrl}/api/${projectId}/store/?sentry_key=${sentryKey}`, {
            method: "POST",
            headers: {
              "content-type": "text/plain;charset=UTF-8",
              "content-encoding": "gzip",
              origin: "https://shop.example"
            },
            body: gzipSync(JSON.stringify({
              event_id: "0123456789abcdef0123456789abcdef",
              timestamp: Date.now() / 1000,
              platform: "javascript",
              exception: {
                values: [{ type: "Error", value: "from the browser", stacktrace: errorEvent({}).exception.stacktrace }]
              }
            }))
          })
          return {
            status: response.status,
            cors: response.headers.get("access-control-allow-origin"),
            body: await response.json() as any
          }
        })
      const accepted = yield* store(a.org.projectId, a.key)
      expect(accepted).toEqual({ status: 200, cors: "*", body: { id: "0123456789abcdef0123456789abcdef" } })
      const wrongProject = yield* store(b.org.projectId, a.key)
      expect([wrongProject.status, wrongProject.body.error, wrongProject.cors]).toEqual([401, "unauthorized", "*"])
      expect((yield* request(`${baseUrl}/api/v1/observe/issues`, { token: b.key })).body.count).toBe(0)
      expect((yield* request(`${baseUrl}/api/v1/observe/issues`, { token: a.key })).body.count).toBe(1)

      const preflight = yield* Effect.promise(() =>
        fetch(`${baseUrl}/api/${a.org.projectId}/envelope/`, {
          method: "OPTIONS",
          headers: { origin: "https://shop.example", "access-control-request-method": "POST" }
        })
      )
      expect(preflight.status).toBe(204)
      expect(preflight.headers.get("access-control-allow-headers")).toContain("x-sentry-auth")
    }))
})
