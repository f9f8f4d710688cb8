import { Effect, Result } from "effect"
import { identity } from "effect/Function"
import { HttpMiddleware, HttpRouter } from "effect/http"
import { IpNetwork } from "effect/net"
import { AppConfig } from "../../services/platform/AppConfig.ts"

/** `10.0.0.0/8` or a single address (`10.0.0.1`, `::1`), as a network. */
export const parseTrustedProxy = (entry: string) =>
  IpNetwork.fromString(entry.includes("/") ? entry : `${entry}/${entry.includes(":") ? 128 : 32}`)

/**
 * `X-Forwarded-For` is honoured only when the connection comes from a proxy listed in
 * `TRUSTED_PROXIES`: then the client address (what per-IP limits count) is the first
 * untrusted hop from the right. Anyone else could otherwise pick their own IP per request.
 */
export const TrustedProxiesMiddleware = HttpRouter.middleware(
  Effect.gen(function*() {
    const config = yield* AppConfig
    const trustedProxies = yield* Effect.forEach(
      config.trustedProxies,
      (entry) =>
        Result.match(parseTrustedProxy(entry), {
          onSuccess: Effect.succeed,
          onFailure: () => Effect.die(new Error(`TRUSTED_PROXIES: '${entry}' is not an IP address or CIDR network`))
        })
    )
    // No proxies trusted (the default): nothing to do per request.
    return trustedProxies.length === 0 ? identity : HttpMiddleware.xForwardedHeaders({ trustedProxies })
  }),
  { global: true }
)
