import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import * as Http from "node:http"
import { LiveServer } from "../../src/http/live/LiveRoutes.ts"
import { answerUnavailableUntilServed } from "../../src/http/NotServing.ts"

const get = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url, { signal: AbortSignal.timeout(10_000) })
    return {
      status: response.status,
      retryAfter: response.headers.get("retry-after"),
      body: await response.json() as { error?: string; ok?: boolean }
    }
  })

const App = HttpRouter.add("GET", "/", HttpServerResponse.jsonUnsafe({ ok: true }))

describe("a server that is not serving its app yet (or any more)", () => {
  it.effect("answers 503 with Retry-After while the app is being built, then the app answers", () =>
    Effect.gen(function*() {
      // The app's server as main.ts makes it: listening as soon as its layer is built.
      const context = yield* Layer.build(
        LiveServer.httpServer({ port: 0, host: "127.0.0.1" }).pipe(Layer.provideMerge(LiveServer.layer))
      )
      const server = yield* HttpServer.HttpServer.pipe(Effect.provideContext(context))
      const address = server.address
      if (address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
      const url = `http://127.0.0.1:${address.port}/`

      // Before: this request had no listener and hung until the client gave up.
      const starting = yield* get(url)
      expect(starting).toEqual({
        status: 503,
        retryAfter: "2",
        body: { error: "unavailable", message: expect.stringContaining("retry shortly"), retryAfter: 2 }
      })

      yield* Layer.build(HttpRouter.serve(App, { disableLogger: true })).pipe(Effect.provideContext(context))
      const served = yield* get(url)
      expect(served).toEqual({ status: 200, retryAfter: null, body: { ok: true } })
      // Only the app answers now: the 503 listener is gone, not merely second in line.
      expect(Context.get(context, LiveServer).server.listenerCount("request")).toBe(1)
    }).pipe(Effect.scoped))

  it.effect("answers 503 again once the app's handler is taken away (stopping)", () =>
    Effect.gen(function*() {
      const server = answerUnavailableUntilServed(Http.createServer())
      yield* Effect.acquireRelease(
        Effect.callback<void>((resume) => {
          server.listen(0, "127.0.0.1", () => resume(Effect.void))
        }),
        () =>
          Effect.callback<void>((resume) => {
            server.close(() => resume(Effect.void))
          })
      )
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`
      const handler = (_: Http.IncomingMessage, response: Http.ServerResponse) =>
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true }))

      server.on("request", handler)
      expect((yield* get(url)).status).toBe(200)
      expect(server.listeners("request")).toEqual([handler])

      server.off("request", handler)
      const stopping = yield* get(url)
      expect(stopping.status).toBe(503)
      expect(stopping.body.error).toBe("unavailable")
      expect(server.listenerCount("request")).toBe(1)
    }).pipe(Effect.scoped))
})
