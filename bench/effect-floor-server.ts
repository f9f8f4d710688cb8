import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { createServer } from "node:http"

/**
 * The framework's floor: the smallest Effect HTTP server (one route, no middleware)
 * answering a fixed JSON body, the same bytes Canopy's /api/v1/me returns.
 */
const body = process.env.BODY ?? "{}"
const Route = HttpRouter.add("GET", "/", HttpServerResponse.text(body, { contentType: "application/json" }))

HttpRouter.serve(Route, { disableLogger: true }).pipe(
  Layer.provide(NodeHttpServer.layer(createServer, { port: Number(process.env.PORT), host: "127.0.0.1" })),
  Layer.launch,
  NodeRuntime.runMain
)
