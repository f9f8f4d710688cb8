import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import {
  HttpApi,
  HttpApiBuilder,
  HttpApiEndpoint,
  HttpApiError,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSecurity
} from "effect/http-api"
import { createServer } from "node:http"

/**
 * The HttpApi floor: the smallest authenticated HttpApi endpoint, answering the same bytes as
 * Canopy's /api/v1/me. One group, one endpoint, behind a bearer security middleware that only
 * compares the key with a constant and provides a principal: no hashing, no key lookup, no
 * rate limiter, no edge middleware. What any authenticated endpoint costs before Canopy's
 * own work, so /me against it is what Canopy adds. With `SECURITY=none` the group has no
 * middleware at all: what any HttpApi endpoint costs, authenticated or not.
 */
const body = process.env.BODY ?? "{}"
const key = process.env.KEY ?? ""
const secured = process.env.SECURITY !== "none"

class Principal extends Context.Service<Principal, { readonly key: string }>()("bench/Principal") {}

class Bearer extends HttpApiMiddleware.Service<Bearer, { provides: Principal }>()("bench/Bearer", {
  security: { bearer: HttpApiSecurity.bearer },
  error: HttpApiError.Unauthorized
}) {}

const MeGroup = HttpApiGroup.make("me").add(HttpApiEndpoint.get("me", "/", { success: Schema.String }))
const Api = HttpApi.make("floor").add(MeGroup.middleware(Bearer))
const UnsecuredApi = HttpApi.make("floor").add(MeGroup)

/** Made per request, as Canopy makes its own. */
const answer = () => HttpServerResponse.text(body, { contentType: "application/json" })

const BearerLive = Layer.succeed(Bearer)({
  bearer: (httpEffect, { credential }) =>
    Redacted.value(credential) === key
      ? Effect.provideService(httpEffect, Principal, { key })
      : Effect.fail(new HttpApiError.Unauthorized())
})

const MeLive = HttpApiBuilder.group(Api, "me", (handlers) => handlers.handle("me", () => Effect.map(Principal, answer)))
const UnsecuredMeLive = HttpApiBuilder.group(
  UnsecuredApi,
  "me",
  (handlers) => handlers.handle("me", () => Effect.sync(answer))
)

const Routes = secured
  ? HttpApiBuilder.layer(Api).pipe(Layer.provide(MeLive), Layer.provide(BearerLive))
  : HttpApiBuilder.layer(UnsecuredApi).pipe(Layer.provide(UnsecuredMeLive))

HttpRouter.serve(Routes, { disableLogger: true }).pipe(
  Layer.provide(NodeHttpServer.layer(createServer, { port: Number(process.env.PORT), host: "127.0.0.1" })),
  Layer.launch,
  NodeRuntime.runMain
)
