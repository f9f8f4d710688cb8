import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer, Option, Redacted } from "effect"
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createHash, timingSafeEqual } from "node:crypto"
import * as Http from "node:http"
import { MetricsExporter } from "../../../services/metrics/MetricsExporter.ts"
import { AppConfig, metricsConfigOf } from "../../../services/platform/AppConfig.ts"
import { errorResponse } from "../ErrorResponse.ts"

const digest = (value: string) => createHash("sha256").update(value).digest()

/** Compares digests, so the comparison takes the same time whatever the guess. */
const tokenMatches = (expected: Buffer, authorization: string | undefined) =>
  authorization !== undefined && authorization.startsWith("Bearer ") &&
  timingSafeEqual(expected, digest(authorization.slice("Bearer ".length).trim()))

/** The Prometheus text of this runner, behind `METRICS_TOKEN` when one is set. */
const metricsHandler = (token: Option.Option<Redacted.Redacted>) => {
  const expected = Option.map(token, (secret) => digest(Redacted.value(secret)))
  return Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (Option.isSome(expected) && !tokenMatches(expected.value, request.headers.authorization)) {
      return errorResponse(401, "unauthorized", "GET /metrics needs the METRICS_TOKEN bearer token").pipe(
        HttpServerResponse.setHeader("www-authenticate", "Bearer")
      )
    }
    const exporter = yield* MetricsExporter
    return HttpServerResponse.text(yield* exporter.render, {
      contentType: "text/plain; version=0.0.4; charset=utf-8"
    })
  })
}

/** `GET /metrics` on the main port, unless metrics are off or have a port of their own. */
export const MetricsRoute = Layer.unwrap(Effect.gen(function*() {
  const metrics = metricsConfigOf(yield* AppConfig)
  if (!metrics.enabled || Option.isSome(metrics.port)) return Layer.empty
  return HttpRouter.add("GET", "/metrics", metricsHandler(metrics.token))
}))

/**
 * `METRICS_PORT`: a listener of its own that answers only `GET /metrics` (so it can stay on
 * a private network while the main port faces users). Its `HttpServer` is provided to it
 * alone: the app's stays the main one.
 */
export const MetricsPortServer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* AppConfig
  const metrics = metricsConfigOf(config)
  if (!metrics.enabled || Option.isNone(metrics.port)) return Layer.empty
  const handler = metricsHandler(metrics.token)
  const app = Effect.flatMap(
    HttpServerRequest.HttpServerRequest,
    (request) =>
      request.method === "GET" && request.url.split("?")[0] === "/metrics"
        ? handler
        : Effect.succeed(errorResponse(404, "not_found", "This port serves only GET /metrics"))
  )
  return HttpServer.serve(app).pipe(
    Layer.provide(NodeHttpServer.layer(() => Http.createServer(), { port: metrics.port.value, host: config.host }))
  )
}))
