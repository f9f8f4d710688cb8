import type * as Http from "node:http"
import { unavailableRetryAfter } from "./Unavailable.ts"

const body = JSON.stringify({
  error: "unavailable",
  message: "Canopy is starting or stopping; retry shortly",
  retryAfter: unavailableRetryAfter
})

const answerUnavailable = (request: Http.IncomingMessage, response: Http.ServerResponse) => {
  // The body of a request is not read: close the connection rather than reuse it.
  response.writeHead(503, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    "retry-after": String(unavailableRetryAfter),
    connection: "close"
  })
  response.end(body)
  request.resume()
}

/**
 * Answers 503 (GUIDE §4 body, `Retry-After`) on a Node server for as long as no one else
 * listens to its requests. The Effect server listens once its layer is built but attaches the
 * app's handler only when every service the app needs is up (seconds later: migrations, the
 * cluster), and detaches it while stopping; a request in between had no listener and hung
 * until the client gave up (a readiness probe included). The app's handler replaces this one.
 */
export const answerUnavailableUntilServed = <S extends Http.Server>(server: S): S => {
  let replacing = false
  server.on("newListener", (event: string | symbol, listener: unknown) => {
    if (event !== "request" || listener === answerUnavailable) return
    replacing = true
    server.off("request", answerUnavailable)
    replacing = false
  })
  server.on("removeListener", (event: string | symbol) => {
    if (event === "request" && !replacing && server.listenerCount("request") === 0) {
      server.on("request", answerUnavailable)
    }
  })
  server.on("request", answerUnavailable)
  return server
}
