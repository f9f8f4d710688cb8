import { Effect, Layer, Result, Schema } from "effect"
import { IpNetwork, NetAddress } from "effect/net"
import { randomUUID } from "node:crypto"
import type * as Http from "node:http"
import { BadgeQuery } from "../../../schemas/status/Status.ts"
import { AppConfig } from "../../../services/platform/AppConfig.ts"
import { type PublicEndpoint, PublicRateLimit } from "../../../services/ratelimits/PublicRateLimit.ts"
import { BADGE_DEFAULTS } from "../../../services/status/Badge.ts"
import { type Rendered, StatusCache } from "../../../services/status/StatusCache.ts"
import { LiveServer } from "../live/LiveRoutes.ts"
import { recordHttpRequest } from "../metrics/HttpMetrics.ts"
import { parseTrustedProxy } from "../TrustedProxies.ts"
import { FEED_CACHE, matchesEtag, SHORT_CACHE } from "./cachedResponse.ts"
import { LOGO_CSP } from "./LogoRoute.ts"
import { corsHeaders } from "./PublicCors.ts"

/**
 * The raw fast path of the public status surface: a GET whose answer is already in
 * this runner's `StatusCache` (fresh, or stale with its refresh under way: what the route would
 * answer) is written straight to the Node response, before the Effect
 * HTTP app (router, edge and CORS middlewares, a fiber per request) sees it. During an
 * outage nearly every request is such a hit, and serving it costs little more than bare
 * `node:http` serving the same bytes (`npm run bench:status`).
 *
 * It answers exactly as the routes do for a hit: the same per-IP limit (the same
 * `PublicRateLimit`, the same client address behind `TRUSTED_PROXIES`), rate-limit headers
 * where the route sends them, CORS, strong ETag and 304, Cache-Control, `nosniff`, the
 * request id. Everything else falls through to the Effect app untouched: a miss, a stale
 * entry nobody refreshes yet (the app starts the refresh), an invalidated entry, a query
 * string (but the badge's options, decoded with the route's Schema, and the logo's `?v=`,
 * which the route ignores), a spent limit (the app answers the 429;
 * a refused take counts nothing), any other method or path. `test/status/FastPath.test.ts`
 * compares the two paths' answers.
 */

interface FastRoute {
  readonly key: string
  readonly limit: PublicEndpoint
  /** The route puts the rate-limit headers on its answers (the HTML page does not). */
  readonly rateHeaders: boolean
  readonly cacheControl: string
  readonly headers: Readonly<Record<string, string>>
  readonly ignoresQuery: boolean
  /** The Effect route's template, so a fast answer counts in the same metrics series. */
  readonly template: string
}

const route = (
  key: string,
  limit: PublicEndpoint,
  template: string,
  options: Partial<FastRoute> = {}
): FastRoute => ({
  key,
  limit,
  template,
  rateHeaders: true,
  cacheControl: SHORT_CACHE,
  headers: {},
  ignoresQuery: false,
  ...options
})

const summary = route("summary", "status", "/api/v1/status/:slug")
const widget = route("widget", "widget", "/api/v1/widget/:slug")
const feed = route("feed", "feed", "/api/v1/feed/:slug", { cacheControl: FEED_CACHE })
const page = route("page", "status", "/status/:slug", {
  rateHeaders: false,
  headers: { "referrer-policy": "no-referrer" }
})
const logo = route("logo", "badge", "/status/:slug/logo", {
  headers: { "content-security-policy": LOGO_CSP },
  ignoresQuery: true
})

const badge = route("badge", "badge", "/api/v1/badge/:slug/:monitorId")

const slugPattern = /^[a-z0-9-]{2,40}$/
/** Ids as the app makes them: nothing the router would percent-decode differently. */
const monitorIdPattern = /^[A-Za-z0-9_-]{1,100}$/
const decodeBadgeQuery = Schema.decodeUnknownResult(BadgeQuery)

/**
 * The badge's cache key for a request, exactly as `BadgeRoute` builds it (the same Schema
 * over the same query parameters, the same defaults), or undefined when the query is not
 * valid (the route answers its 400).
 */
const badgeKey = (url: string, monitorId: string): string | undefined => {
  const params = new URL(url, "http://localhost").searchParams
  const input: Record<string, string> = {}
  for (const key of Object.keys(BadgeQuery.fields)) {
    const value = params.get(key)
    if (value !== null) input[key] = value
  }
  const query = decodeBadgeQuery(input)
  if (Result.isFailure(query)) return undefined
  const { label = BADGE_DEFAULTS.label, period = BADGE_DEFAULTS.period, style = BADGE_DEFAULTS.style } = query.success
  return JSON.stringify(["badge", monitorId, style, label, period])
}

/** The cached route a path names, with its slug. */
const match = (
  path: string
): { readonly route: FastRoute; readonly slug: string; readonly monitorId?: string } | undefined => {
  const parts = path.split("/")
  if (parts.length === 6 && parts[1] === "api" && parts[2] === "v1" && parts[3] === "badge") {
    return slugPattern.test(parts[4]) && monitorIdPattern.test(parts[5])
      ? { route: badge, slug: parts[4], monitorId: parts[5] }
      : undefined
  }
  // "/api/v1/status/x" → ["", "api", "v1", "status", "x"]; "/status/x" → ["", "status", "x"]
  if (parts.length === 5 && parts[1] === "api" && parts[2] === "v1") {
    const found = parts[3] === "status"
      ? summary
      : parts[3] === "widget"
      ? widget
      : parts[3] === "feed"
      ? feed
      : undefined
    return found === undefined || !slugPattern.test(parts[4]) ? undefined : { route: found, slug: parts[4] }
  }
  if (parts[1] !== "status" || !slugPattern.test(parts[2] ?? "")) return undefined
  if (parts.length === 3) return { route: page, slug: parts[2] }
  if (parts.length === 4 && parts[3] === "logo") return { route: logo, slug: parts[2] }
  return undefined
}

const parseAddress = (input: string | undefined): NetAddress.IpAddress | undefined => {
  if (input === undefined) return undefined
  const ip = NetAddress.ipFromString(input.startsWith("[") && input.endsWith("]") ? input.slice(1, -1) : input)
  if (Result.isSuccess(ip)) return NetAddress.toCanonical(ip.success)
  const inet = NetAddress.inetAddressFromString(input)
  return Result.isSuccess(inet) ? NetAddress.toCanonical(inet.success.address) : undefined
}

/** A dotted quad already in canonical form (no leading zeros): `formatIp` would give it back unchanged. */
const canonicalIpv4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/

/** Per list of trusted networks, whether a connection's peer is one: parsed once per (keep-alive) socket. */
const peerTrustBy = new WeakMap<ReadonlyArray<IpNetwork.IpNetwork>, WeakMap<object, boolean>>()

/**
 * The client address as `clientIp` sees it after `TrustedProxiesMiddleware` (Effect's
 * `xForwardedHeaders`): the socket's peer, or behind a trusted proxy the first untrusted
 * `X-Forwarded-For` hop from the right.
 */
export const clientAddress = (
  request: Http.IncomingMessage,
  trusted: ReadonlyArray<IpNetwork.IpNetwork>
): string => {
  const socketAddress = request.socket.remoteAddress ?? "unknown"
  if (trusted.length === 0) return socketAddress
  const isTrusted = (address: NetAddress.IpAddress) => trusted.some((network) => IpNetwork.contains(network, address))
  let peerTrust = peerTrustBy.get(trusted)
  if (peerTrust === undefined) peerTrustBy.set(trusted, peerTrust = new WeakMap())
  let peerTrusted = peerTrust.get(request.socket)
  if (peerTrusted === undefined) {
    const peer = parseAddress(request.socket.remoteAddress)
    peerTrusted = peer !== undefined && isTrusted(peer)
    peerTrust.set(request.socket, peerTrusted)
  }
  const forwarded = request.headers["x-forwarded-for"]
  if (!peerTrusted || typeof forwarded !== "string") return socketAddress
  // One plain IPv4 hop (what a single proxy sends): the answer as is, without parsing.
  if (canonicalIpv4.test(forwarded)) return forwarded
  const hops = forwarded.split(",").map((hop) => hop.trim())
  for (let index = hops.length - 1; index >= 0; index--) {
    const address = parseAddress(hops[index])
    if (address === undefined) return socketAddress
    if (index > 0 && isTrusted(address)) continue
    return NetAddress.formatIp(address)
  }
  return socketAddress
}

const requestIdPattern = /^[A-Za-z0-9._-]{1,64}$/

interface Prebuilt {
  /** The headers every answer of this route and entry carries (304 included). */
  readonly common: ReadonlyArray<string>
  /** A 200's own: content type and length. */
  readonly content: ReadonlyArray<string>
}

/** Per route, the headers of each cached entry, built once per entry (an entry's bytes never change). */
const prebuiltByRoute = new Map<FastRoute, WeakMap<Rendered, Prebuilt>>()

const headersOf = (route: FastRoute, entry: Rendered): Prebuilt => {
  let byEntry = prebuiltByRoute.get(route)
  if (byEntry === undefined) prebuiltByRoute.set(route, byEntry = new WeakMap())
  let prebuilt = byEntry.get(entry)
  if (prebuilt === undefined) {
    const common = {
      ...route.headers,
      etag: entry.etag,
      "cache-control": route.cacheControl,
      "x-content-type-options": "nosniff",
      ...corsHeaders
    }
    prebuilt = {
      common: Object.entries(common).flat(),
      content: ["content-type", entry.contentType, "content-length", String(entry.body.length)]
    }
    byEntry.set(entry, prebuilt)
  }
  return prebuilt
}

/**
 * Installs the fast path on the app's Node server while the layer is up. `PublicRateLimit.layer`
 * is memoized: the same per-IP windows as the Effect app's routes.
 */
export const PublicFastPath = Layer.effectDiscard(Effect.gen(function*() {
  const live = yield* LiveServer
  const cache = yield* StatusCache
  const limits = yield* PublicRateLimit
  const config = yield* AppConfig
  const trusted = config.trustedProxies.flatMap((entry) => {
    const network = parseTrustedProxy(entry)
    return Result.isSuccess(network) ? [network.success] : []
  })

  const serve = (request: Http.IncomingMessage, response: Http.ServerResponse): boolean => {
    if (request.method !== "GET") return false
    const started = performance.now()
    const url = request.url ?? ""
    const queryAt = url.indexOf("?")
    const found = match(queryAt < 0 ? url : url.slice(0, queryAt))
    if (found === undefined) return false
    let key = found.route.key
    if (found.monitorId !== undefined) {
      const badgeEntry = badgeKey(url, found.monitorId)
      if (badgeEntry === undefined) return false
      key = badgeEntry
    } else if (queryAt >= 0 && !found.route.ignoresQuery) return false
    const entry = cache.peek(found.slug, key)
    if (entry === undefined || entry.status !== 200) return false
    const decision = limits.takeNow(found.route.limit, clientAddress(request, trusted))
    if (!decision.allowed) return false
    const incomingId = request.headers["x-request-id"]
    const prebuilt = headersOf(found.route, entry)
    // A flat [name, value, …] list: `writeHead` writes it as is, with no object to walk.
    const headers = found.route.rateHeaders
      ? [
        ...prebuilt.common,
        "x-ratelimit-limit",
        String(decision.limit),
        "x-ratelimit-remaining",
        String(decision.remaining),
        "x-ratelimit-reset",
        String(decision.reset)
      ]
      : [...prebuilt.common]
    headers.push(
      "x-request-id",
      typeof incomingId === "string" && requestIdPattern.test(incomingId) ? incomingId : randomUUID()
    )
    if (matchesEtag(request.headers["if-none-match"], entry.etag)) {
      response.writeHead(304, headers).end()
      recordHttpRequest(found.route.template, "GET", 304, started)
      return true
    }
    headers.push(...prebuilt.content)
    response.writeHead(200, headers).end(entry.body)
    recordHttpRequest(found.route.template, "GET", 200, started)
    return true
  }

  live.fastPath = serve
  yield* Effect.addFinalizer(() => Effect.sync(() => live.fastPath = undefined))
})).pipe(Layer.provide(PublicRateLimit.layer))
