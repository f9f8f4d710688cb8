import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"

/**
 * CORS on every public status route (summary, widget, feed, badge, page, logo, subscribe), so
 * any site can read them from a browser. They take no credentials and set no cookies, so
 * `*` is safe. Preflights are answered here, before routing (no route declares OPTIONS),
 * and count against no limit.
 */
const publicPaths: ReadonlyArray<RegExp> = [
  /^\/api\/v1\/status\/[^/]+\/?$/,
  /^\/api\/v1\/widget\/[^/]+\/?$/,
  /^\/api\/v1\/feed\/[^/]+\/?$/,
  /^\/api\/v1\/badge\/[^/]+\/[^/]+\/?$/,
  /^\/status\/[^/]+\/?$/,
  /^\/status\/[^/]+\/logo\/?$/,
  /^\/api\/v1\/subscribe(\/challenge)?\/?$/
]

const pathOf = (url: string) => {
  const queryAt = url.indexOf("?")
  return queryAt < 0 ? url : url.slice(0, queryAt)
}

export const isPublicPath = (path: string) => publicPaths.some((pattern) => pattern.test(path))

export const corsHeaders = {
  "access-control-allow-origin": "*",
  "access-control-expose-headers": "etag, x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset, retry-after"
}

const preflightHeaders = {
  ...corsHeaders,
  "access-control-allow-methods": "GET, HEAD, POST, OPTIONS",
  "access-control-allow-headers": "content-type, accept, if-none-match",
  "access-control-max-age": "86400"
}

export const PublicCorsMiddleware = HttpRouter.middleware(
  (httpEffect) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      if (!isPublicPath(pathOf(request.url))) return httpEffect
      if (request.method === "OPTIONS") {
        return Effect.succeed(HttpServerResponse.empty({ status: 204, headers: preflightHeaders }))
      }
      return Effect.map(httpEffect, (response) => HttpServerResponse.setHeaders(response, corsHeaders))
    }),
  { global: true }
)
