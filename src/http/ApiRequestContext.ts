import { Context, Effect, Layer, Scope, Tracer } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest } from "effect/http"
import { RequestState } from "./RequestState.ts"

/**
 * The framework's per-request state (its key is internal to effect/http; contexts match keys by name).
 * It carries the request's pre-response handlers and scope ejection. effect/http has no public
 * handle on it; `test/platform/ApiRequestContext.test.ts` fails loudly when an upgrade moves it.
 */
const CurrentRequestState = Context.Service<unknown>("effect/http/HttpEffect/CurrentRequestState")

/** What a request adds to the server's context on its way to an HttpApi endpoint. */
const requestKeys: ReadonlyArray<Context.Key<any, any>> = [
  HttpServerRequest.HttpServerRequest,
  HttpServerRequest.ParsedSearchParams,
  HttpRouter.RouteContext,
  Scope.Scope,
  CurrentRequestState,
  Tracer.ParentSpan,
  HttpIncomingMessage.MaxBodySize,
  RequestState
]

/** A context of the request's own entries only (a handful of lookups, no copy of the server's context). */
export const requestOnly = (context: Context.Context<never>): Context.Context<never> => {
  const map = new Map<string, unknown>()
  for (const key of requestKeys) {
    const value = Context.getOrUndefined(context, key)
    if (value !== undefined) map.set(key.key, value)
  }
  return Context.makeUnsafe(map)
}

/**
 * Route middleware of the HttpApi endpoints. Each endpoint provides the whole context its
 * group was built with on every call, which merges it into the request's context: with the
 * server's context underneath (every service of the app, a few hundred entries) that merge
 * copied both maps per request, the largest cost of /api/v1/me beyond the framework's floor.
 * The endpoint's own context already holds every service it can ask for, so it runs on the
 * request's entries alone; the server's context is back in place once it answers.
 */
export const ApiRequestContext = HttpRouter.middleware((httpEffect) => Effect.updateContext(httpEffect, requestOnly))
  .layer

/**
 * Builds an HttpApi group on the services it names and nothing else. A group's endpoints
 * merge the context the group was built with into every request; built inside the app that
 * is every service (about a hundred entries set per request), built here it is a handful.
 * For hot groups whose handlers and middleware take what they need when built: the
 * requirements are checked by type, so a service left out does not compile.
 */
export const builtOn =
  <const Keys extends ReadonlyArray<Context.Key<any, any>>>(...keys: Keys) =>
  <ROut, E, RIn extends Context.Service.Identifier<Keys[number]>>(
    layer: Layer.Layer<ROut, E, RIn>
  ): Layer.Layer<ROut, E, Context.Service.Identifier<Keys[number]>> =>
    Layer.effectContext(Effect.contextWith((context: Context.Context<Context.Service.Identifier<Keys[number]>>) => {
      const own = new Map<string, unknown>()
      for (const key of [...keys, Scope.Scope]) own.set(key.key, Context.getUnsafe(context, key))
      return Effect.updateContext(
        Layer.build(layer),
        () => Context.makeUnsafe(own) as Context.Context<RIn | Scope.Scope>
      )
    })) as Layer.Layer<ROut, E, Context.Service.Identifier<Keys[number]>>
