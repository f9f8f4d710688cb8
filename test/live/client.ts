import { Effect } from "effect"
import { WebSocket } from "ws"

/** A real `ws` client recording every message it receives; closed with the scope. */
export interface LiveClient {
  readonly ws: WebSocket
  readonly messages: Array<{ type: string; data: any; at?: string }>
  readonly closed: { code: number | undefined }
}

export const connectLive = (url: string, headers?: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.callback<LiveClient, Error>((resume) => {
      const ws = new WebSocket(url, { headers })
      const client: LiveClient = { ws, messages: [], closed: { code: undefined } }
      ws.on("message", (data) => client.messages.push(JSON.parse(String(data))))
      ws.on("close", (code) => {
        client.closed.code = code
      })
      ws.once("open", () => resume(Effect.succeed(client)))
      ws.once("unexpected-response", (_req, res) => {
        resume(Effect.fail(new Error(`HTTP ${res.statusCode}`)))
        res.resume()
      })
      ws.once("error", (error) => resume(Effect.fail(error)))
    }),
    ({ ws }) => Effect.sync(() => ws.terminate())
  )

/** The HTTP status a refused upgrade answers with. */
export const refusedStatus = (url: string, headers?: Record<string, string>) =>
  Effect.flip(Effect.scoped(connectLive(url, headers))).pipe(Effect.map((error) => error.message))

export const liveUrl = (baseUrl: string, path: string) => baseUrl.replace(/^http/, "ws") + path
