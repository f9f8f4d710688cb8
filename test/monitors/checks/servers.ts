import { Effect, type Scope } from "effect"
import * as Http from "node:http"
import * as Https from "node:https"
import * as Net from "node:net"
import { WebSocketServer } from "ws"

// Real servers on loopback for the checks to reach, closed with the test's scope.

export interface SeenRequest {
  readonly method: string
  readonly url: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
}

export interface TestServer {
  readonly port: number
  readonly url: string
  readonly requests: Array<SeenRequest>
  readonly connections: () => number
}

export const listen = <S extends Net.Server>(server: S, host: string) =>
  Effect.acquireRelease(
    Effect.callback<number>((resume) => {
      server.once("error", (error) => resume(Effect.die(error)))
      server.listen(0, host, () => resume(Effect.succeed((server.address() as Net.AddressInfo).port)))
    }),
    () =>
      Effect.callback<void>((resume) => {
        if ("closeAllConnections" in server) (server as unknown as Http.Server).closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

export type Handler = (request: Http.IncomingMessage, body: string, response: Http.ServerResponse) => void

/** An HTTP(S) server that records every request and counts TCP connections. */
export const httpServer = (
  handler: Handler,
  options: { host?: string; tls?: { key: string; cert: string } } = {}
): Effect.Effect<TestServer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const host = options.host ?? "127.0.0.1"
    const requests: Array<SeenRequest> = []
    let connections = 0
    const onRequest = (request: Http.IncomingMessage, response: Http.ServerResponse) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8")
        requests.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers, body })
        handler(request, body, response)
      })
    }
    const server = options.tls ? Https.createServer(options.tls, onRequest) : Http.createServer(onRequest)
    server.on("connection", () => connections++)
    const port = yield* listen(server, host)
    const urlHost = Net.isIPv6(host) ? `[${host}]` : host
    return {
      port,
      url: `${options.tls ? "https" : "http"}://${urlHost}:${port}`,
      requests,
      connections: () => connections
    }
  })

/** A TCP server that closes every connection at once, counting them. */
export const tcpServer = Effect.gen(function*() {
  let connections = 0
  const server = Net.createServer((socket) => {
    connections++
    socket.end()
  })
  const port = yield* listen(server, "127.0.0.1")
  return { port, connections: () => connections }
})

/** A port nothing listens on (bound, then released). */
export const closedPort = Effect.gen(function*() {
  const server = Net.createServer()
  const port = yield* Effect.callback<number>((resume) => {
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as Net.AddressInfo).port)))
  })
  yield* Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
  return port
})

export const json = (response: Http.ServerResponse, status: number, value: unknown) => {
  response.writeHead(status, { "content-type": "application/json" })
  response.end(JSON.stringify(value))
}

export const wsServer = Effect.gen(function*() {
  const wss = new WebSocketServer({ noServer: true })
  const closes: Array<number> = []
  let upgrades = 0
  wss.on("connection", (socket) => socket.on("close", (code) => closes.push(code)))
  const server = Http.createServer((_req, res) => res.writeHead(426).end())
  let connections = 0
  server.on("connection", () => connections++)
  server.on("upgrade", (request: Http.IncomingMessage, socket: Net.Socket, head: Buffer) => {
    if (request.url === "/ok" && request.headers["x-token"] === "t0k") {
      upgrades++
      wss.handleUpgrade(request, socket, head, (ws) => wss.emit("connection", ws, request))
    } else if (request.url === "/bogus") {
      socket.end(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: bm9wZQ==\r\n\r\n"
      )
    } else if (request.url === "/hang") {
      // never answers; let the socket go once the client gives up
      socket.resume()
      socket.on("end", () => socket.destroy())
    } else {
      socket.end("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    }
  })
  const port = yield* listen(server, "127.0.0.1")
  yield* Effect.addFinalizer(() => Effect.sync(() => wss.close()))
  return { url: `ws://127.0.0.1:${port}`, closes, upgrades: () => upgrades, connections: () => connections }
})
