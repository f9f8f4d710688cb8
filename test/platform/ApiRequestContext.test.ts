import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpEffect, HttpRouter, HttpServerResponse } from "effect/http"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { ApiRequestContext } from "../../src/http/ApiRequestContext.ts"

/**
 * `ApiRequestContext` keeps the framework's per-request state by its key name, an internal
 * of effect/http with no public handle. These tests fail loudly when an upgrade moves it:
 * without the state, pre-response handlers (headers added by middleware and handlers on
 * their way out) would be dropped in silence.
 */
describe("ApiRequestContext pins effect/http's request state", () => {
  it("effect still declares the request state under the key ApiRequestContext names", () => {
    const effectRoot = Path.dirname(createRequire(import.meta.url).resolve("effect/package.json"))
    const source = Fs.readFileSync(Path.join(effectRoot, "src/http/internal/requestState.ts"), "utf8")
    expect(source).toContain(`Context.Service<RequestState>("effect/http/HttpEffect/CurrentRequestState")`)
    const ours = Fs.readFileSync(new URL("../../src/http/ApiRequestContext.ts", import.meta.url), "utf8")
    expect(ours).toContain(`"effect/http/HttpEffect/CurrentRequestState"`)
  })

  it.effect("a pre-response handler registered behind the middleware still reaches the response", () =>
    Effect.gen(function*() {
      const route = HttpRouter.add(
        "GET",
        "/probe",
        HttpEffect.appendPreResponseHandler((_request, response) =>
          Effect.succeed(HttpServerResponse.setHeader(response, "x-pre-response", "kept"))
        ).pipe(Effect.as(HttpServerResponse.text("ok")))
      )
      const { dispose, handler } = HttpRouter.toWebHandler(route.pipe(Layer.provide(ApiRequestContext)), {
        disableLogger: true
      })
      const response = yield* Effect.promise(() => handler(new Request("http://localhost/probe")))
      yield* Effect.promise(dispose)
      expect(response.status).toBe(200)
      expect(response.headers.get("x-pre-response")).toBe("kept")
    }))
})
