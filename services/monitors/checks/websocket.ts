import { Effect } from "effect"
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import * as Https from "node:https"
import type * as Net from "node:net"
import { type CheckContext, guardedAddresses, networkFailure, parseUrl } from "./network.ts"
import { CheckFailure, type CheckSuccess, type CheckTarget, DEFAULT_USER_AGENT } from "./types.ts"

const WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

export const expectedAccept = (key: string) => Crypto.createHash("sha1").update(key + WEBSOCKET_GUID).digest("base64")

/** A masked close frame with status 1000 (normal closure), as a client must send it. */
const closeFrame = () => {
  const mask = Crypto.randomBytes(4)
  const payload = Buffer.from([0x03, 0xe8])
  const masked = payload.map((byte, i) => byte ^ mask[i % 4])
  return Buffer.concat([Buffer.from([0x88, 0x80 | payload.length]), mask, masked])
}

const closeGracefully = (socket: Net.Socket) => {
  socket.on("error", () => {})
  socket.setTimeout(1000, () => socket.destroy())
  socket.end(closeFrame())
}

/**
 * `websocket`: the opening handshake (RFC 6455 §4) completes: `101 Switching
 * Protocols` with the right `Sec-WebSocket-Accept`. The connection is pinned to
 * the guard-checked address; redirects are not followed (a WebSocket client
 * does not follow them). The connection is then closed with status 1000.
 */
export const websocketCheck = (context: CheckContext, target: CheckTarget): Effect.Effect<CheckSuccess, CheckFailure> =>
  Effect.gen(function*() {
    const url = parseUrl(target.url)
    if (url === undefined) return yield* new CheckFailure({ message: `invalid URL: ${target.url}` })
    if (url.protocol !== "ws:" && url.protocol !== "wss:") {
      return yield* new CheckFailure({ message: `unsupported URL scheme ${url.protocol} (expected ws: or wss:)` })
    }
    const secure = url.protocol === "wss:"
    const httpUrl = new URL(url.href)
    httpUrl.protocol = secure ? "https:" : "http:"
    httpUrl.hash = ""
    const addresses = yield* guardedAddresses(context, url.hostname)
    const key = Crypto.randomBytes(16).toString("base64")
    const userHeaders = Object.fromEntries(
      Object.entries(target.headers).filter(([name]) =>
        !["connection", "upgrade", "sec-websocket-key", "sec-websocket-version"].includes(name.toLowerCase())
      )
    )
    const headers: Record<string, string> = {
      "User-Agent": context.options.userAgent ?? DEFAULT_USER_AGENT,
      ...userHeaders,
      Connection: "Upgrade",
      Upgrade: "websocket",
      "Sec-WebSocket-Key": key,
      "Sec-WebSocket-Version": "13"
    }
    const statusCode = yield* Effect.callback<number, CheckFailure>((resume) => {
      let settled = false
      let request: Http.ClientRequest | undefined
      const finish = (effect: Effect.Effect<number, CheckFailure>) => {
        if (settled) return
        settled = true
        // the upgraded socket is detached from the request; anything else is closed here
        request?.destroy()
        resume(effect)
      }
      try {
        request = (secure ? Https : Http).request(httpUrl, {
          method: "GET",
          headers,
          lookup: context.guard.pinnedLookup(addresses),
          agent: false,
          ...(secure && context.ca !== undefined ? { ca: [...context.ca] } : {})
        })
      } catch (error) {
        finish(Effect.fail(networkFailure(error)))
        return
      }
      const sent = request
      sent.on("upgrade", (response, socket) => {
        const accept = response.headers["sec-websocket-accept"]
        const upgrade = response.headers.upgrade?.toLowerCase()
        if (response.statusCode !== 101 || upgrade !== "websocket") {
          socket.destroy()
          return finish(Effect.fail(
            new CheckFailure({ message: "invalid WebSocket handshake: not an upgrade to websocket", statusCode: 101 })
          ))
        }
        if (accept !== expectedAccept(key)) {
          socket.destroy()
          return finish(Effect.fail(
            new CheckFailure({ message: "invalid WebSocket handshake: wrong Sec-WebSocket-Accept", statusCode: 101 })
          ))
        }
        closeGracefully(socket)
        finish(Effect.succeed(101))
      })
      sent.on("response", (response) => {
        finish(Effect.fail(
          new CheckFailure({
            message: `expected status 101 (WebSocket upgrade), got ${response.statusCode}`,
            statusCode: response.statusCode ?? 0
          })
        ))
      })
      sent.on("error", (error) => finish(Effect.fail(networkFailure(error))))
      sent.end()
      return Effect.sync(() => {
        settled = true
        sent.destroy()
      })
    })
    return { statusCode }
  })
