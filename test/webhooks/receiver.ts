import { Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

export interface Received {
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: Buffer
  readonly at: number
}

/**
 * A real HTTP receiver on loopback. `respond` picks each answer: a status, "hang" (never
 * answer), or a promise of a status (answered when the test settles it). Records every
 * request with its exact body bytes.
 */
export const startReceiver = (
  respond: (request: Received, index: number) => number | "hang" | Promise<number> = () => 200
) =>
  Effect.acquireRelease(
    Effect.callback<{ server: Http.Server; received: Array<Received> }>((resume) => {
      const received: Array<Received> = []
      const server = Http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          const request = { path: req.url ?? "/", headers: req.headers, body: Buffer.concat(chunks), at: Date.now() }
          received.push(request)
          const answer = respond(request, received.length - 1)
          if (answer === "hang") return
          const send = (status: number) => {
            res.statusCode = status
            res.setHeader("content-type", "text/plain")
            res.end(status < 300 ? "thanks" : "nope")
          }
          if (typeof answer === "number") send(answer)
          else void answer.then(send)
        })
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ server, received })))
    }),
    ({ server }) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ received, server }) => {
    const { port } = server.address() as AddressInfo
    return {
      url: (path = "/hook") => `http://127.0.0.1:${port}${path}`,
      port,
      received,
      on: (path: string) => received.filter((request) => request.path === path)
    }
  }))
