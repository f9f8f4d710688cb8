import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Layer, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import type * as Http from "node:http"
import { type WebSocket, WebSocketServer } from "ws"
import { type LiveConnection, LiveHub } from "../../../services/live/LiveHub.ts"
import { ApiKeys } from "../../../services/platform/ApiKeys.ts"
import { Tenancy } from "../../../services/platform/Tenancy.ts"
import { errorResponse } from "../ErrorResponse.ts"

/**
 * The live status stream's WebSocket endpoints (GUIDE §6):
 * - `GET /api/v1/live/{slug}`: public, the organization's status page channel;
 * - `GET /api/v1/live`: an API key with `status:read` (header `Authorization: Bearer`, or
 *   `access_token` in the query for browsers), adding `heartbeat` and `observe.spike`.
 *
 * The route answers refusals (unknown slug 404, bad key 401, missing scope 403, not an
 * upgrade 400) as ordinary JSON responses. Accepted requests are handed to `ws` on the
 * raw connection: unlike the Effect socket, `ws` exposes `bufferedAmount` and ping frames,
 * which the hub needs to bound each client's send buffer and to detect dead peers. The
 * request fiber lives as long as the connection and ends after the socket has closed.
 */

const slugPattern = /^[a-z0-9-]{2,40}$/

const notUpgrade = errorResponse(
  400,
  "validation_error",
  "This endpoint speaks WebSocket: send an Upgrade: websocket request"
)

export const LiveRoutes = Layer.unwrap(Effect.gen(function*() {
  // Clients send nothing but control frames: tiny frames only, no compression state per client.
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4096, perMessageDeflate: false })
  yield* Effect.addFinalizer(() => Effect.sync(() => wss.close()))

  const accept = (request: HttpServerRequest.HttpServerRequest, connection: LiveConnection) =>
    Effect.gen(function*() {
      const hub = yield* LiveHub
      const incoming = NodeHttpServerRequest.toIncomingMessage(request) as Http.IncomingMessage
      if ((incoming.headers.upgrade ?? "").toLowerCase() !== "websocket") return notUpgrade
      const ws = yield* Effect.callback<WebSocket | undefined>((resume) => {
        const socket = incoming.socket
        if (socket.destroyed) return resume(Effect.succeed(undefined))
        wss.handleUpgrade(incoming, socket, Buffer.alloc(0), (ws) => resume(Effect.succeed(ws)))
      })
      if (ws !== undefined) yield* hub.serve(ws, connection)
      return HttpServerResponse.empty()
    })

  const publicChannel = HttpRouter.add("GET", "/api/v1/live/:slug", (request) =>
    Effect.gen(function*() {
      const tenancy = yield* Tenancy
      const { slug } = yield* HttpRouter.params
      if (slug === undefined || !slugPattern.test(slug)) {
        return errorResponse(404, "not_found", "No status page by that name")
      }
      const org = yield* Effect.option(tenancy.findOrganization(slug))
      if (Option.isNone(org)) return errorResponse(404, "not_found", `No status page for '${slug}'`)
      return yield* accept(request, { orgId: org.value.id, slug: org.value.slug, authenticated: false })
    }))

  const privateChannel = HttpRouter.add("GET", "/api/v1/live", (request) =>
    Effect.gen(function*() {
      const keys = yield* ApiKeys
      const header = request.headers.authorization
      const query = new URL(request.url, "http://localhost").searchParams.get("access_token")
      const secret = header !== undefined && /^bearer /i.test(header) ? header.slice(7).trim() : query
      if (secret === null || secret === "") return errorResponse(401, "unauthorized", "Missing API key")
      const principal = yield* Effect.option(keys.authenticate(secret))
      if (Option.isNone(principal)) return errorResponse(401, "unauthorized", "Unknown or revoked API key")
      if (!principal.value.scopes.includes("status:read")) {
        return errorResponse(403, "forbidden", "This key lacks the 'status:read' scope")
      }
      const org = principal.value.org
      return yield* accept(request, { orgId: org.id, slug: org.slug, authenticated: true })
    }))

  return Layer.mergeAll(publicChannel, privateChannel)
}))
