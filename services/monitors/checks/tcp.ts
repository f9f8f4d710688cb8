import { Effect } from "effect"
import * as Net from "node:net"
import { type CheckContext, guardedAddresses, networkFailure, parseUrl } from "./network.ts"
import { CheckFailure, type CheckSuccess, type CheckTarget } from "./types.ts"

/** `tcp://host:port` (or bare `host:port`) → host without brackets and port. */
export const parseTcpTarget = (url: string): { readonly host: string; readonly port: number } | undefined => {
  const parsed = parseUrl(url.includes("://") ? url : `tcp://${url}`)
  if (parsed === undefined || parsed.protocol !== "tcp:" || parsed.hostname === "") return undefined
  const port = Number(parsed.port)
  if (parsed.port === "" || !Number.isInteger(port) || port < 1 || port > 65535) return undefined
  const host = parsed.hostname.startsWith("[") ? parsed.hostname.slice(1, -1) : parsed.hostname
  return { host, port }
}

/** `tcp`: a TCP connection to the checked address completes. */
export const tcpCheck = (context: CheckContext, target: CheckTarget): Effect.Effect<CheckSuccess, CheckFailure> =>
  Effect.gen(function*() {
    const parsed = parseTcpTarget(target.url)
    if (parsed === undefined) {
      return yield* new CheckFailure({ message: `invalid URL: ${target.url} (expected tcp://host:port)` })
    }
    const addresses = yield* guardedAddresses(context, parsed.host)
    yield* Effect.callback<void, CheckFailure>((resume) => {
      const socket = Net.connect({
        host: parsed.host,
        port: parsed.port,
        lookup: context.guard.pinnedLookup(addresses)
      })
      socket.once("connect", () => {
        socket.destroy()
        resume(Effect.void)
      })
      socket.once("error", (error) => {
        socket.destroy()
        resume(Effect.fail(networkFailure(error)))
      })
      return Effect.sync(() => socket.destroy())
    })
    return {}
  })
