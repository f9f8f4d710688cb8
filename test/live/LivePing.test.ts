import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import type { AddressInfo } from "node:net"
import { WebSocket, WebSocketServer } from "ws"
import { LiveHub } from "../../services/live/LiveHub.ts"
import { bootstrapOrg, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"

/**
 * The hub's heartbeat with real sockets: a hub with a short ping interval (the app's is
 * 30 s) built on a running app's services, fed by a plain `ws` server. A client that
 * answers pings stays; one that does not is terminated after the next ping.
 */
describe("live stream pings", () => {
  it.live("a client that does not answer pings is dropped, one that does stays", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const { org } = yield* bootstrapOrg(app.baseUrl, { slug: "live-ping" })
      const hubContext = yield* Layer.build(LiveHub.layerWith({ pingInterval: "300 millis" })).pipe(
        Effect.provideContext(app.context)
      )
      const hub = Context.get(hubContext, LiveHub)
      const server = yield* Effect.acquireRelease(
        Effect.callback<WebSocketServer>((resume) => {
          const wss: WebSocketServer = new WebSocketServer({ port: 0, host: "127.0.0.1" }, () => {
            resume(Effect.succeed(wss))
          })
          wss.on("connection", (ws: WebSocket) => {
            Effect.runFork(hub.attach(ws, { orgId: org.id, slug: "live-ping", authenticated: false }))
          })
        }),
        (wss) =>
          Effect.callback<void>((resume) => {
            for (const client of wss.clients) client.terminate()
            wss.close(() => resume(Effect.void))
          })
      )
      const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`
      const open = (options: { autoPong: boolean }) =>
        Effect.acquireRelease(
          Effect.callback<{ ws: WebSocket; closed: { at?: number } }>((resume) => {
            const ws = new WebSocket(url, options)
            const closed: { at?: number } = {}
            ws.on("close", () => {
              closed.at = Date.now()
            })
            ws.once("message", () => resume(Effect.succeed({ ws, closed })))
          }),
          ({ ws }) => Effect.sync(() => ws.terminate())
        )
      const answering = yield* open({ autoPong: true })
      const silent = yield* open({ autoPong: false })
      expect(yield* hub.connections).toBe(2)

      yield* eventually("the silent client dropped", Effect.sync(() => silent.closed.at), (at) => at !== undefined)
      expect(yield* hub.connections).toBe(1)
      // Several more ping rounds later the answering client is still connected.
      let pings = 0
      answering.ws.on("ping", () => pings++)
      yield* eventually("three more pings", Effect.sync(() => pings), (count) => count >= 3)
      expect(answering.closed.at).toBeUndefined()
      expect(yield* hub.connections).toBe(1)
    }).pipe(Effect.scoped))
})
