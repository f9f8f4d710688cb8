import { Context, Effect, Layer, Schema } from "effect"
import * as Dns from "node:dns"
import type * as Net from "node:net"
import { isIP, isIPv4, isIPv6 } from "node:net"
import { AppConfig } from "../platform/AppConfig.ts"

/**
 * SSRF protection for every outbound connection Canopy makes on behalf of a
 * user (uptime checks, webhooks).
 *
 * A host is allowed only when EVERY address it resolves to is a public unicast
 * address (unless `allowPrivate`). To defeat DNS rebinding the connection must
 * use the very addresses that were checked: `resolve` returns them and
 * `pinnedLookup` turns them into a `lookup` for `net.connect` / `http.request` /
 * undici `connect`, so Node never resolves the name a second time. Redirects are
 * new connections and go through `resolve` again.
 *
 * Node skips `lookup` when the host is an IP literal, so a caller that only
 * passes `guard.lookup` must still call `resolve` (or `blockedReason`) for IP
 * literals; `resolve` handles both cases.
 */

/** Why an address is not a public unicast address. */
export type AddressCategory =
  | "private"
  | "loopback"
  | "link-local"
  | "unique-local"
  | "unspecified"
  | "cgnat"
  | "multicast"
  | "reserved"

export interface ResolvedAddress {
  readonly address: string
  readonly family: 4 | 6
}

export class OutboundBlocked extends Schema.TaggedError<OutboundBlocked>()("OutboundBlocked", {
  host: Schema.String,
  address: Schema.String,
  category: Schema.String,
  message: Schema.String
}) {}

export class OutboundLookupFailed extends Schema.TaggedError<OutboundLookupFailed>()("OutboundLookupFailed", {
  host: Schema.String,
  code: Schema.String,
  message: Schema.String
}) {}

export interface OutboundGuardOptions {
  /** Allow private, loopback and other non-public addresses (tests, self-hosting). */
  readonly allowPrivate: boolean
  /**
   * CIDRs (`10.1.0.0/16`, `fd00::/8`, `192.168.1.5`) allowed even though they are
   * not public: a narrower escape hatch than `allowPrivate`.
   */
  readonly allowCidrs?: ReadonlyArray<string> | undefined
}

export interface OutboundGuardShape {
  readonly allowPrivate: boolean
  /** `undefined` when the guard lets `address` through, else the category that blocks it. */
  readonly blockedReason: (address: string) => AddressCategory | undefined
  /**
   * Resolves `host` (a name or an IP literal, brackets allowed) and checks every
   * address. Connect only to the returned addresses (see `pinnedLookup`).
   */
  readonly resolve: (
    host: string
  ) => Effect.Effect<ReadonlyArray<ResolvedAddress>, OutboundBlocked | OutboundLookupFailed>
  /**
   * A Node `lookup` that resolves and checks in one step; the connection uses the
   * address it returns. Errors carry `code: "ERR_OUTBOUND_BLOCKED"` or the DNS code.
   * Not called by Node for IP-literal hosts: check those with `resolve`.
   */
  readonly lookup: Net.LookupFunction
  /** A Node `lookup` that answers only with already-checked addresses (no DNS). */
  readonly pinnedLookup: (addresses: ReadonlyArray<ResolvedAddress>) => Net.LookupFunction
}

export class OutboundGuard extends Context.Service<OutboundGuard, OutboundGuardShape>()(
  "canopy/outbound/OutboundGuard"
) {
  static layer(options: OutboundGuardOptions): Layer.Layer<OutboundGuard> {
    return Layer.succeed(OutboundGuard, makeOutboundGuard(options))
  }

  /** Reads `OUTBOUND_ALLOW_PRIVATE` through AppConfig. */
  static readonly layerFromConfig: Layer.Layer<OutboundGuard, never, AppConfig> = Layer.effect(
    OutboundGuard,
    AppConfig.useSync((config) => makeOutboundGuard({ allowPrivate: config.outboundAllowPrivate }))
  )
}

// ---------------------------------------------------------------------------
// Address classification (pure)
// ---------------------------------------------------------------------------

const ipv4ToNumber = (address: string): number | undefined => {
  if (!isIPv4(address)) return undefined
  const parts = address.split(".").map(Number)
  return ((parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]) >>> 0
}

const numberToIpv4 = (n: number): string => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".")

/** The eight 16-bit groups of an IPv6 address (zone id ignored), or undefined. */
const ipv6Groups = (input: string): Array<number> | undefined => {
  const address = input.split("%")[0]
  if (!isIPv6(address)) return undefined
  let text = address.toLowerCase()
  // dotted IPv4 tail (::ffff:127.0.0.1) → two hex groups
  const lastColon = text.lastIndexOf(":")
  const tail = text.slice(lastColon + 1)
  if (tail.includes(".")) {
    const v4 = ipv4ToNumber(tail)
    if (v4 === undefined) return undefined
    text = `${text.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`
  }
  const [head, rest] = text.split("::") as [string, string | undefined]
  const headGroups = head === "" ? [] : head.split(":")
  const restGroups = rest === undefined || rest === "" ? [] : rest.split(":")
  const missing = 8 - headGroups.length - restGroups.length
  const groups = rest === undefined
    ? headGroups
    : [...headGroups, ...Array.from({ length: missing }, () => "0"), ...restGroups]
  if (groups.length !== 8) return undefined
  return groups.map((g) => parseInt(g, 16))
}

const groupsToBigInt = (groups: ReadonlyArray<number>): bigint =>
  groups.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n)

const inV4 = (n: number, base: string, bits: number): boolean => {
  const b = ipv4ToNumber(base)!
  if (bits === 0) return true
  const mask = bits === 32 ? 0xffffffff : (~((1 << (32 - bits)) - 1)) >>> 0
  return ((n & mask) >>> 0) === ((b & mask) >>> 0)
}

const inV6 = (value: bigint, base: string, bits: number): boolean => {
  const b = groupsToBigInt(ipv6Groups(base)!)
  const shift = BigInt(128 - bits)
  return (value >> shift) === (b >> shift)
}

const IPV4_RANGES: ReadonlyArray<readonly [string, number, AddressCategory]> = [
  ["0.0.0.0", 8, "unspecified"], // "this network"
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "cgnat"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "reserved"], // IETF protocol assignments
  ["192.0.2.0", 24, "reserved"], // TEST-NET-1
  ["192.31.196.0", 24, "reserved"], // AS112
  ["192.52.193.0", 24, "reserved"], // AMT
  ["192.88.99.0", 24, "reserved"], // 6to4 relay anycast
  ["192.168.0.0", 16, "private"],
  ["192.175.48.0", 24, "reserved"], // AS112 direct delegation
  ["198.18.0.0", 15, "reserved"], // benchmarking
  ["198.51.100.0", 24, "reserved"], // TEST-NET-2
  ["203.0.113.0", 24, "reserved"], // TEST-NET-3
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"] // incl. 255.255.255.255 broadcast
]

const classifyIpv4Number = (n: number): AddressCategory | undefined => {
  for (const [base, bits, category] of IPV4_RANGES) {
    if (inV4(n, base, bits)) return category
  }
  return undefined
}

const classifyIpv6Groups = (groups: ReadonlyArray<number>): AddressCategory | undefined => {
  const value = groupsToBigInt(groups)
  const embeddedV4 = Number(value & 0xffffffffn)
  if (value === 0n) return "unspecified"
  if (value === 1n) return "loopback"
  // IPv4-mapped ::ffff:a.b.c.d and IPv4-translated ::ffff:0:a.b.c.d: judged by the IPv4 address
  if (inV6(value, "::ffff:0:0", 96) || inV6(value, "::ffff:0:0:0", 96)) return classifyIpv4Number(embeddedV4)
  // deprecated IPv4-compatible ::a.b.c.d: never legitimately routed
  if (inV6(value, "::", 96)) return classifyIpv4Number(embeddedV4) ?? "reserved"
  // NAT64 well-known prefix: reaches the embedded IPv4 address
  if (inV6(value, "64:ff9b::", 96)) return classifyIpv4Number(embeddedV4)
  if (inV6(value, "64:ff9b:1::", 48)) return "private" // local-use NAT64
  // 6to4: 2002:AABB:CCDD::/48 carries IPv4 AA.BB.CC.DD
  if (inV6(value, "2002::", 16)) return classifyIpv4Number(Number((value >> 80n) & 0xffffffffn))
  if (inV6(value, "100::", 64)) return "reserved" // discard-only
  if (inV6(value, "2001:db8::", 32)) return "reserved" // documentation
  if (inV6(value, "2001::", 23)) return "reserved" // IETF protocol assignments (Teredo, ORCHID, …)
  if (inV6(value, "3fff::", 20)) return "reserved" // documentation
  if (inV6(value, "5f00::", 16)) return "reserved" // SRv6 SIDs
  if (inV6(value, "fc00::", 7)) return "unique-local"
  if (inV6(value, "fe80::", 10)) return "link-local"
  if (inV6(value, "fec0::", 10)) return "private" // deprecated site-local
  if (inV6(value, "ff00::", 8)) return "multicast"
  // everything outside global unicast 2000::/3 is unassigned or special
  if (!inV6(value, "2000::", 3)) return "reserved"
  return undefined
}

/**
 * Classifies an IP address: `undefined` for a public unicast address, else why it
 * is not one. Invalid input is `"reserved"` (never allowed).
 */
export const classifyAddress = (address: string): AddressCategory | undefined => {
  const text = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address
  const v4 = ipv4ToNumber(text)
  if (v4 !== undefined) return classifyIpv4Number(v4)
  const groups = ipv6Groups(text)
  if (groups !== undefined) return classifyIpv6Groups(groups)
  return "reserved"
}

type Cidr = { readonly family: 4; readonly base: number; readonly bits: number } | {
  readonly family: 6
  readonly base: bigint
  readonly bits: number
}

const parseCidr = (cidr: string): Cidr => {
  const [address, bitsText] = cidr.trim().split("/")
  const v4 = ipv4ToNumber(address)
  if (v4 !== undefined) {
    const bits = bitsText === undefined ? 32 : Number(bitsText)
    if (!Number.isInteger(bits) || bits < 0 || bits > 32) throw new Error(`invalid CIDR: ${cidr}`)
    return { family: 4, base: v4, bits }
  }
  const groups = ipv6Groups(address)
  if (groups === undefined) throw new Error(`invalid CIDR: ${cidr}`)
  const bits = bitsText === undefined ? 128 : Number(bitsText)
  if (!Number.isInteger(bits) || bits < 0 || bits > 128) throw new Error(`invalid CIDR: ${cidr}`)
  return { family: 6, base: groupsToBigInt(groups), bits }
}

const cidrContains = (cidr: Cidr, address: string): boolean => {
  if (cidr.family === 4) {
    let n = ipv4ToNumber(address)
    if (n === undefined) {
      // an IPv4-mapped IPv6 address is the IPv4 address
      const groups = ipv6Groups(address)
      if (groups === undefined) return false
      const value = groupsToBigInt(groups)
      if (!inV6(value, "::ffff:0:0", 96)) return false
      n = Number(value & 0xffffffffn)
    }
    return inV4(n, numberToIpv4(cidr.base), cidr.bits)
  }
  const groups = ipv6Groups(address)
  if (groups === undefined) return false
  const shift = BigInt(128 - cidr.bits)
  return (groupsToBigInt(groups) >> shift) === (cidr.base >> shift)
}

/**
 * Checks a set of resolved addresses: the first one the policy blocks, if any.
 * One bad address blocks the whole host (a name resolving to both a public and a
 * private address is refused).
 */
export const firstBlocked = (
  addresses: ReadonlyArray<string>,
  blockedReason: (address: string) => AddressCategory | undefined
): { readonly address: string; readonly category: AddressCategory } | undefined => {
  for (const address of addresses) {
    const category = blockedReason(address)
    if (category !== undefined) return { address, category }
  }
  return undefined
}

// ---------------------------------------------------------------------------
// The guard
// ---------------------------------------------------------------------------

const stripBrackets = (host: string) => host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host

const toFamily = (family: number | string): 4 | 6 => family === 6 || family === "IPv6" ? 6 : 4

const wantedFamily = (options: Dns.LookupOptions | number | undefined): 0 | 4 | 6 => {
  const family = typeof options === "number" ? options : options?.family
  if (family === 4 || family === "IPv4") return 4
  if (family === 6 || family === "IPv6") return 6
  return 0
}

const wantsAll = (options: Dns.LookupOptions | number | undefined) =>
  typeof options === "object" && options.all === true

/** The Node error `lookup` reports when the guard refuses an address. */
export interface OutboundBlockedNodeError extends NodeJS.ErrnoException {
  readonly code: "ERR_OUTBOUND_BLOCKED"
  readonly address: string
  readonly category: AddressCategory
}

const blockedMessage = (category: AddressCategory, address: string) => `blocked: ${category} address ${address}`

export const makeOutboundGuard = (options: OutboundGuardOptions): OutboundGuardShape => {
  const allowList = (options.allowCidrs ?? []).map(parseCidr)
  const blockedReason = (address: string): AddressCategory | undefined => {
    if (options.allowPrivate) return undefined
    const category = classifyAddress(address)
    if (category === undefined) return undefined
    return allowList.some((cidr) => cidrContains(cidr, stripBrackets(address))) ? undefined : category
  }

  const resolveCallback = (
    rawHost: string,
    done: (
      error: OutboundBlocked | OutboundLookupFailed | undefined,
      addresses: ReadonlyArray<ResolvedAddress>
    ) => void
  ) => {
    const host = stripBrackets(rawHost)
    const check = (addresses: ReadonlyArray<ResolvedAddress>) => {
      if (addresses.length === 0) {
        return done(
          new OutboundLookupFailed({ host, code: "ENOTFOUND", message: `DNS lookup failed: ENOTFOUND ${host}` }),
          []
        )
      }
      const blocked = firstBlocked(addresses.map((a) => a.address), blockedReason)
      if (blocked !== undefined) {
        return done(
          new OutboundBlocked({
            host,
            address: blocked.address,
            category: blocked.category,
            message: blockedMessage(blocked.category, blocked.address)
          }),
          []
        )
      }
      done(undefined, addresses)
    }
    if (host === "") {
      return done(new OutboundLookupFailed({ host, code: "EINVAL", message: "DNS lookup failed: empty host" }), [])
    }
    const literal = isIP(host)
    if (literal !== 0) return check([{ address: host.split("%")[0], family: literal as 4 | 6 }])
    Dns.lookup(host, { all: true, order: "verbatim" }, (error, result) => {
      if (error) {
        const code = error.code ?? "EAI_FAIL"
        return done(new OutboundLookupFailed({ host, code, message: `DNS lookup failed: ${code} ${host}` }), [])
      }
      check(result.map((entry) => ({ address: entry.address, family: toFamily(entry.family) })))
    })
  }

  const resolve = (host: string) =>
    Effect.callback<ReadonlyArray<ResolvedAddress>, OutboundBlocked | OutboundLookupFailed>((resume) => {
      resolveCallback(host, (error, addresses) => resume(error ? Effect.fail(error) : Effect.succeed(addresses)))
    })

  const answer = (
    addresses: ReadonlyArray<ResolvedAddress>,
    hostname: string,
    lookupOptions: Dns.LookupOptions | number | undefined,
    callback: Parameters<Net.LookupFunction>[2]
  ) => {
    const family = wantedFamily(lookupOptions)
    const matching = family === 0 ? addresses : addresses.filter((a) => a.family === family)
    if (matching.length === 0) {
      const error: NodeJS.ErrnoException = new Error(
        `DNS lookup failed: ENOTFOUND ${hostname} (no IPv${family} address)`
      )
      error.code = "ENOTFOUND"
      return callback(error, "")
    }
    if (wantsAll(lookupOptions)) return callback(null, matching.map((a) => ({ address: a.address, family: a.family })))
    callback(null, matching[0].address, matching[0].family)
  }

  const lookup: Net.LookupFunction = (hostname, lookupOptions, callback) => {
    resolveCallback(hostname, (error, addresses) => {
      if (error === undefined) return answer(addresses, hostname, lookupOptions, callback)
      const nodeError = new Error(error.message) as NodeJS.ErrnoException & Record<string, unknown>
      if (error._tag === "OutboundBlocked") {
        nodeError.code = "ERR_OUTBOUND_BLOCKED"
        nodeError.address = error.address
        nodeError.category = error.category
      } else {
        nodeError.code = error.code
      }
      nodeError.hostname = hostname
      callback(nodeError, "")
    })
  }

  const pinnedLookup = (addresses: ReadonlyArray<ResolvedAddress>): Net.LookupFunction => (hostname, o, callback) =>
    answer(addresses, hostname, o, callback)

  return { allowPrivate: options.allowPrivate, blockedReason, resolve, lookup, pinnedLookup }
}
