import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer, Option } from "effect"
import { HttpRouter } from "effect/http"
import * as Http from "node:http"
import type { Duplex } from "node:stream"
import { type WebSocket, WebSocketServer } from "ws"
import { type LiveConnection, LiveHub } from "../../../services/live/LiveHub.ts"
import { ApiKeys } from "../../../services/tenancy/ApiKeys.ts"
import { Tenancy } from "../../../services/tenancy/Tenancy.ts"
import { errorResponse } from "../ErrorResponse.ts"
import { answerUnavailableUntilServed } from "../NotServing.ts"

/**
 * The live status stream's WebSocket endpoints (GUIDE §6):
 * - `GET /api/v1/live/{slug}`: public, the organization's status page channel;
 * - `GET /api/v1/live`: an API key with `status:read` (header `Authorization: Bearer`, or
 *   `access_token` in the query for browsers), adding `heartbeat` and `observe.spike`.
 *
 * Upgrade requests to these paths are taken from the Node server before the Effect HTTP
 * app sees them and handed to `ws` directly: `ws` exposes `bufferedAmount` and ping
 * frames, which the hub needs to bound each client's send buffer and detect dead peers,
 * and an open connection then costs no request fiber (memory per idle client is what the
 * live benchmark measures). Refusals (unknown slug 404, bad key 401, missing scope 403)
 * are plain HTTP answers with the GUIDE §4 body; a plain GET answers 400.
 */
const livePath = /^\/api\/v1\/live(?:\/([^/?]*))?(?:\?|$)/
const slugPattern = /^[a-z0-9-]{2,40}$/

type UpgradeHandler = (request: Http.IncomingMessage, socket: Duplex, head: Buffer) => boolean

type RequestHandler = (request: Http.IncomingMessage, response: Http.ServerResponse) => boolean

/**
 * The app's Node server, whose `upgrade` events go to `intercept` first, and its `request`
 * events to `fastPath` (the public status cache's hits, `PublicFastPath.ts`).
 */
export class LiveServer extends Context.Service<LiveServer, {
  readonly server: Http.Server
  intercept: UpgradeHandler | undefined
  fastPath: RequestHandler | undefined
}>()("canopy/http/LiveServer") {
  static readonly layer = Layer.sync(LiveServer, () => {
    const holder: { server: Http.Server; intercept: UpgradeHandler | undefined; fastPath: RequestHandler | undefined } =
      {
        server: answerUnavailableUntilServed(Http.createServer()),
        intercept: undefined,
        fastPath: undefined
      }
    const emit = holder.server.emit
    holder.server.emit = function(this: Http.Server, event: string | symbol, ...args: Array<any>) {
      if (event === "request" && holder.fastPath?.(args[0], args[1]) === true) return true
      if (event === "upgrade" && holder.intercept?.(args[0], args[1], args[2]) === true) return true
      return emit.apply(this, [event, ...args] as Parameters<typeof emit>)
    } as typeof emit
    return LiveServer.of(holder)
  })

  /** The Effect HTTP server on this Node server. */
  static readonly httpServer = (options: { readonly port: number; readonly host: string }) =>
    Layer.unwrap(Effect.map(Effect.service(LiveServer), (live) => NodeHttpServer.layer(() => live.server, options)))
}

interface Refused {
  readonly status: number
  readonly error: string
  readonly message: string
}

const refusal = (socket: Duplex, status: number, error: string, message: string) => {
  const body = JSON.stringify({ error, message })
  socket.end(
    `HTTP/1.1 ${status} ${Http.STATUS_CODES[status]}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  )
}

/** Installs the upgrade interception for the live paths while the layer is up. */
export const LiveUpgrades = Layer.effectDiscard(Effect.gen(function*() {
  const live = yield* LiveServer
  const hub = yield* LiveHub
  const keys = yield* ApiKeys
  const tenancy = yield* Tenancy
  // Clients send nothing but control frames: tiny frames only, no compression state per client.
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4096, perMessageDeflate: false })

  const connectionFor = (
    request: Http.IncomingMessage,
    slug: string | undefined
  ): Effect.Effect<LiveConnection | Refused> =>
    Effect.gen(function*() {
      if (slug !== undefined) {
        const org = slugPattern.test(slug) ? yield* Effect.option(tenancy.findOrganization(slug)) : Option.none()
        if (Option.isNone(org)) return { status: 404, error: "not_found", message: `No status page for '${slug}'` }
        return { orgId: org.value.id, slug: org.value.slug, authenticated: false } satisfies LiveConnection
      }
      const header = request.headers.authorization
      const query = new URL(request.url ?? "/", "http://localhost").searchParams.get("access_token")
      const secret = header !== undefined && /^bearer /i.test(header) ? header.slice(7).trim() : query
      if (secret === null || secret === "") return { status: 401, error: "unauthorized", message: "Missing API key" }
      const principal = yield* Effect.option(keys.authenticate(secret))
      if (Option.isNone(principal)) return { status: 401, error: "unauthorized", message: "Unknown or revoked API key" }
      if (!principal.value.scopes.includes("status:read")) {
        return { status: 403, error: "forbidden", message: "This key lacks the 'status:read' scope" }
      }
      const org = principal.value.org
      return { orgId: org.id, slug: org.slug, authenticated: true } satisfies LiveConnection
    })

  const upgrade = (request: Http.IncomingMessage, socket: Duplex, head: Buffer) =>
    Effect.callback<WebSocket | undefined>((resume) => {
      // `ws` never calls back for a socket that closed meanwhile: resume on close instead.
      const onClose = () => resume(Effect.succeed(undefined))
      if (socket.destroyed) return onClose()
      socket.once("close", onClose)
      wss.handleUpgrade(request, socket, head, (ws) => {
        socket.off("close", onClose)
        resume(Effect.succeed(ws))
      })
    })

  const handle = (request: Http.IncomingMessage, socket: Duplex, head: Buffer, slug: string | undefined) =>
    Effect.gen(function*() {
      const connection = yield* connectionFor(request, slug)
      if ("status" in connection) return refusal(socket, connection.status, connection.error, connection.message)
      const ws = yield* upgrade(request, socket, head)
      if (ws !== undefined) yield* hub.attach(ws, connection)
    }).pipe(
      Effect.catchCause((cause) =>
        Effect.andThen(
          Effect.logError("live stream: upgrade failed", cause),
          Effect.sync(() => socket.destroy())
        )
      )
    )

  const context = yield* Effect.context<never>()
  const run = Effect.runForkWith(context)
  live.intercept = (request, socket, head) => {
    const match = livePath.exec(request.url ?? "")
    if (match === null || request.method !== "GET") return false
    socket.on("error", () => {}) // a peer reset before the handshake is not an error of ours
    let slug: string | undefined
    try {
      slug = match[1] === undefined ? undefined : decodeURIComponent(match[1])
    } catch {
      slug = "" // malformed percent-encoding: no such page
    }
    run(handle(request, socket, head, slug))
    return true
  }
  // Released before the HTTP server shuts down (see App.ts), which would otherwise wait
  // for the upgraded sockets until its grace period ends.
  yield* Effect.addFinalizer(() =>
    Effect.andThen(
      Effect.sync(() => {
        live.intercept = undefined
        wss.close()
      }),
      hub.closeAll
    )
  )
}))

const plainRequest = Effect.succeed(
  errorResponse(400, "validation_error", "This endpoint speaks WebSocket: send an Upgrade: websocket request")
)

/** Plain (non-upgrade) requests to the live paths. */
export const LiveRoutes = Layer.mergeAll(
  HttpRouter.add("GET", "/api/v1/live", plainRequest),
  HttpRouter.add("GET", "/api/v1/live/:slug", plainRequest)
)
