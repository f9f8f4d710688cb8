import * as Dns from "node:dns/promises"
import * as Net from "node:net"
import * as Os from "node:os"
import { type AddressCategory, classifyAddress, firstBlocked, makeOutboundGuard } from "../outbound/OutboundGuard.ts"

/**
 * The only way out of a CI job's network namespace (GUIDE §14: "outbound network … reaches
 * public addresses only, with the SSRF guard's rules"): an HTTP proxy on a unix socket that
 * is mounted into the sandbox, where a forwarder exposes it as `127.0.0.1:3128` and the job
 * gets `HTTP_PROXY`/`HTTPS_PROXY`. It accepts `CONNECT host:port` (HTTPS, any TLS) and
 * absolute-form plain HTTP requests, resolves the name itself and connects only to the
 * checked addresses (no rebinding), refusing every address the SSRF guard calls non-public
 * (loopback, private, link-local/metadata, CGNAT, reserved…) whatever `OUTBOUND_ALLOW_PRIVATE`
 * says, the host's own addresses, and port 25 (no mail from CI). Refusals answer 403 with
 * the reason.
 */

export interface EgressDecision {
  readonly allowed: boolean
  /** The checked addresses to connect to (allowed), or why not (refused). */
  readonly addresses: ReadonlyArray<string>
  readonly reason: string
}

export interface EgressOptions {
  /** Name → addresses; the default asks the system resolver for every address. */
  readonly resolve?: (host: string) => Promise<ReadonlyArray<string>>
  /** Opens the connection to a checked address; the default is `net.connect`. */
  readonly connect?: (address: string, port: number) => Net.Socket
  /**
   * Non-public CIDRs jobs may reach anyway (`CI_NETWORK_ALLOW_CIDRS`: an internal registry
   * mirror); never loopback nor this host's own addresses.
   */
  readonly allowCidrs?: ReadonlyArray<string>
}

const BLOCKED_PORTS = new Set([25])
const MAX_HEAD = 16 * 1024

const defaultResolve = async (host: string) =>
  (await Dns.lookup(host, { all: true, verbatim: true })).map((entry) => entry.address)

/** The machine's own addresses: public or not, a job must not reach this host through them. */
const hostAddresses = () =>
  new Set(Object.values(Os.networkInterfaces()).flatMap((list) => (list ?? []).map((entry) => entry.address)))

const stripBrackets = (host: string) => host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host

/** Whether a job may connect to `host:port`, and where exactly. */
export const decideEgress = async (
  host: string,
  port: number,
  resolve: (host: string) => Promise<ReadonlyArray<string>> = defaultResolve,
  allowCidrs: ReadonlyArray<string> = []
): Promise<EgressDecision> => {
  const name = stripBrackets(host)
  const refuse = (reason: string): EgressDecision => ({ allowed: false, addresses: [], reason })
  if (!Number.isInteger(port) || port < 1 || port > 65535) return refuse(`invalid port ${port}`)
  if (BLOCKED_PORTS.has(port)) return refuse(`port ${port} is closed to CI jobs`)
  let addresses: ReadonlyArray<string>
  try {
    addresses = Net.isIP(name) !== 0 ? [name] : await resolve(name)
  } catch (error) {
    return refuse(`${name} did not resolve (${(error as NodeJS.ErrnoException).code ?? "error"})`)
  }
  if (addresses.length === 0) return refuse(`${name} did not resolve`)
  const own = hostAddresses()
  const guard = makeOutboundGuard({ allowPrivate: false, allowCidrs })
  const blocked = firstBlocked(addresses, (address): AddressCategory | undefined => {
    if (own.has(address) || classifyAddress(address) === "loopback") return classifyAddress(address) ?? "loopback"
    return guard.blockedReason(address)
  })
  if (blocked !== undefined) {
    return refuse(
      `${name} resolves to ${blocked.address}, a ${
        own.has(blocked.address) ? "address of this host" : `${blocked.category} address`
      }: CI jobs reach public addresses only`
    )
  }
  return { allowed: true, addresses, reason: "public" }
}

/** `host:port` of a CONNECT target or an absolute URL's authority. */
const splitAuthority = (authority: string, defaultPort: number) => {
  const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(authority)
  return match === null ? undefined : { host: match[1], port: match[2] === undefined ? defaultPort : Number(match[2]) }
}

const answer = (socket: Net.Socket, status: string, text: string) => {
  socket.end(`HTTP/1.1 ${status}\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\ncanopy egress: ${text}\n`)
}

const handle = (client: Net.Socket, options: EgressOptions) => {
  let head = Buffer.alloc(0)
  client.on("error", () => client.destroy())
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk])
    const end = head.indexOf("\r\n\r\n")
    if (end === -1) {
      if (head.length > MAX_HEAD) answer(client, "431 Request Header Fields Too Large", "request head too large")
      return
    }
    client.off("data", onData)
    client.pause()
    void route(client, head.subarray(0, end + 4), head.subarray(end + 4), options)
  }
  client.on("data", onData)
}

const route = async (client: Net.Socket, head: Buffer, rest: Buffer, options: EgressOptions) => {
  const lines = head.toString("latin1").split("\r\n")
  const [method, target, version] = lines[0].split(" ")
  let authority: { host: string; port: number } | undefined
  let forward: Buffer | undefined
  if (method === "CONNECT") {
    authority = splitAuthority(target ?? "", 443)
  } else {
    // Plain HTTP through the proxy: absolute-form, passed on in origin-form, one request per connection.
    const url = URL.canParse(target ?? "") ? new URL(target!) : undefined
    if (url !== undefined && url.protocol === "http:") {
      authority = splitAuthority(url.host, 80)
      const headers = lines.slice(1).filter((line) => line !== "" && !/^(proxy-)?connection:/i.test(line))
      forward = Buffer.from(
        [`${method} ${url.pathname}${url.search} ${version}`, ...headers, "Connection: close", "", ""].join("\r\n"),
        "latin1"
      )
    }
  }
  if (authority === undefined) return answer(client, "400 Bad Request", "expected CONNECT host:port or an http:// URL")
  const decision = await decideEgress(authority.host, authority.port, options.resolve, options.allowCidrs)
  if (!decision.allowed) return answer(client, "403 Forbidden", decision.reason)
  const upstream = (options.connect ?? ((address, port) => Net.connect({ host: address, port })))(
    decision.addresses[0],
    authority.port
  )
  let connected = false
  upstream.setTimeout(30_000, () => upstream.destroy(new Error("connection timed out")))
  upstream.once("error", (error) => {
    if (!connected) answer(client, "502 Bad Gateway", `${authority.host}:${authority.port}: ${error.message}`)
    else client.destroy()
  })
  upstream.once("connect", () => {
    connected = true
    upstream.setTimeout(0)
    if (forward === undefined) client.write("HTTP/1.1 200 Connection Established\r\n\r\n")
    else upstream.write(forward)
    if (rest.length > 0) upstream.write(rest)
    client.pipe(upstream)
    upstream.pipe(client)
    client.resume()
  })
  client.once("close", () => upstream.destroy())
  upstream.once("close", () => {
    if (connected) client.destroy()
  })
}

/** Starts the proxy on the unix socket `path`; `close` stops it and every tunnel it opened. */
export const startEgressProxy = (path: string, options: EgressOptions = {}) =>
  new Promise<{ readonly close: () => Promise<void> }>((resolve, reject) => {
    const sockets = new Set<Net.Socket>()
    const server = Net.createServer((client) => {
      sockets.add(client)
      client.once("close", () => sockets.delete(client))
      handle(client, options)
    })
    server.once("error", reject)
    server.listen(path, () =>
      resolve({
        close: () =>
          new Promise<void>((done) => {
            for (const socket of sockets) socket.destroy()
            server.close(() => done())
          })
      }))
  })

/**
 * Runs inside the sandbox (as the job's user): listens on 127.0.0.1:3128 of the job's own
 * network namespace and passes each connection to the proxy's socket; `ready` tells the
 * job's init that it listens.
 */
export const FORWARDER_SOURCE = `const net = require("net"), fs = require("fs")
const [socketPath, ready] = process.argv.slice(2)
net.createServer((client) => {
  const upstream = net.connect(socketPath)
  client.on("error", () => upstream.destroy())
  upstream.on("error", () => client.destroy())
  client.pipe(upstream)
  upstream.pipe(client)
}).listen(3128, "127.0.0.1", () => fs.writeFileSync(ready, ""))
`

export const PROXY_URL = "http://127.0.0.1:3128"
