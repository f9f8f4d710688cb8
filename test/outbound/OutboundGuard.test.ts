import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import * as Http from "node:http"
import * as Net from "node:net"
import {
  type AddressCategory,
  classifyAddress,
  firstBlocked,
  makeOutboundGuard,
  OutboundGuard
} from "../../services/outbound/OutboundGuard.ts"

/** A TCP server on loopback that counts the connections it accepted. */
const tcpServer = (host = "127.0.0.1") =>
  Effect.acquireRelease(
    Effect.callback<{ server: Net.Server; port: number; connections: () => number }>((resume) => {
      let connections = 0
      const server = Net.createServer((socket) => {
        connections++
        socket.end()
      })
      server.listen(0, host, () =>
        resume(Effect.succeed({
          server,
          port: (server.address() as Net.AddressInfo).port,
          connections: () => connections
        })))
    }),
    ({ server }) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
  )

/** Connects with the given `lookup`; resolves with the remote address or the error. */
const connectWith = (options: Net.NetConnectOpts) =>
  Effect.callback<{ remoteAddress?: string; error?: NodeJS.ErrnoException & Record<string, unknown> }>((resume) => {
    const socket = Net.connect(options)
    socket.once("connect", () => {
      const remoteAddress = socket.remoteAddress
      socket.destroy()
      resume(Effect.succeed({ remoteAddress }))
    })
    socket.once("error", (error) => {
      socket.destroy()
      resume(Effect.succeed({ error: error as NodeJS.ErrnoException & Record<string, unknown> }))
    })
  })

describe("classifyAddress", () => {
  const cases: ReadonlyArray<readonly [string, AddressCategory | undefined]> = [
    // IPv4 public
    ["8.8.8.8", undefined],
    ["1.1.1.1", undefined],
    ["93.184.216.34", undefined],
    ["172.15.255.255", undefined],
    ["172.32.0.0", undefined],
    ["100.63.255.255", undefined],
    ["100.128.0.0", undefined],
    ["192.169.0.1", undefined],
    ["223.255.255.255", undefined],
    // IPv4 special
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["10.0.0.1", "private"],
    ["10.255.255.255", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.254", "private"],
    ["192.168.1.1", "private"],
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["169.254.169.254", "link-local"],
    ["100.64.0.1", "cgnat"],
    ["100.127.255.255", "cgnat"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.255", "reserved"],
    ["192.0.0.8", "reserved"],
    ["192.0.2.1", "reserved"],
    ["198.18.0.1", "reserved"],
    ["198.51.100.7", "reserved"],
    ["203.0.113.9", "reserved"],
    // IPv6 public
    ["2606:4700:4700::1111", undefined],
    ["2001:4860:4860::8888", undefined],
    ["2a00:1450:4001:81c::200e", undefined],
    // IPv6 special
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["0:0:0:0:0:0:0:1", "loopback"],
    ["[::1]", "loopback"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["febf::1", "link-local"],
    ["fc00::1", "unique-local"],
    ["fd12:3456:789a::1", "unique-local"],
    ["fec0::1", "private"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "reserved"],
    ["2001::1", "reserved"],
    ["100::1", "reserved"],
    ["4000::1", "reserved"],
    // IPv4 inside IPv6
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["0:0:0:0:0:ffff:7f00:0001", "loopback"],
    ["::ffff:10.0.0.1", "private"],
    ["::ffff:169.254.169.254", "link-local"],
    ["::ffff:8.8.8.8", undefined],
    ["::ffff:0:127.0.0.1", "loopback"],
    ["::127.0.0.1", "loopback"],
    ["::8.8.8.8", "reserved"],
    ["64:ff9b::10.0.0.1", "private"],
    ["64:ff9b::8.8.8.8", undefined],
    ["64:ff9b:1::1", "private"],
    ["2002:7f00:1::1", "loopback"],
    ["2002:c0a8:101::1", "private"],
    ["2002:808:808::1", undefined],
    // not an address
    ["localhost", "reserved"],
    ["999.1.1.1", "reserved"],
    ["", "reserved"]
  ]
  for (const [address, expected] of cases) {
    it(`${address || "(empty)"} → ${expected ?? "public"}`, () => {
      expect(classifyAddress(address)).toBe(expected)
    })
  }
})

describe("guard policy", () => {
  it("allowPrivate lets everything through", () => {
    const guard = makeOutboundGuard({ allowPrivate: true })
    for (const address of ["127.0.0.1", "10.0.0.1", "::1", "169.254.169.254", "8.8.8.8"]) {
      expect(guard.blockedReason(address)).toBeUndefined()
    }
  })

  it("allowCidrs exempts only the listed ranges", () => {
    const guard = makeOutboundGuard({ allowPrivate: false, allowCidrs: ["10.1.0.0/16", "127.0.0.1", "fd00::/8"] })
    expect(guard.blockedReason("10.1.2.3")).toBeUndefined()
    expect(guard.blockedReason("::ffff:10.1.2.3")).toBeUndefined()
    expect(guard.blockedReason("10.2.0.1")).toBe("private")
    expect(guard.blockedReason("127.0.0.1")).toBeUndefined()
    expect(guard.blockedReason("127.0.0.2")).toBe("loopback")
    expect(guard.blockedReason("fd00::5")).toBeUndefined()
    expect(guard.blockedReason("fc00::5")).toBe("unique-local")
    expect(guard.blockedReason("8.8.8.8")).toBeUndefined()
  })

  it("rejects an invalid allowCidrs entry", () => {
    expect(() => makeOutboundGuard({ allowPrivate: false, allowCidrs: ["10.0.0.0/33"] })).toThrow(/invalid CIDR/)
    expect(() => makeOutboundGuard({ allowPrivate: false, allowCidrs: ["nope"] })).toThrow(/invalid CIDR/)
  })

  it("one private address among public ones blocks the host (DNS rebinding)", () => {
    const guard = makeOutboundGuard({ allowPrivate: false })
    expect(firstBlocked(["8.8.8.8", "1.1.1.1"], guard.blockedReason)).toBeUndefined()
    expect(firstBlocked(["8.8.8.8", "10.0.0.7", "1.1.1.1"], guard.blockedReason)).toEqual({
      address: "10.0.0.7",
      category: "private"
    })
    expect(firstBlocked(["2606:4700:4700::1111", "::ffff:127.0.0.1"], guard.blockedReason)).toEqual({
      address: "::ffff:127.0.0.1",
      category: "loopback"
    })
  })
})

describe("OutboundGuard.resolve", () => {
  const strict = OutboundGuard.layer({ allowPrivate: false })
  const open = OutboundGuard.layer({ allowPrivate: true })

  it.effect("refuses private IP literals and names resolving to them", () =>
    Effect.gen(function*() {
      const guard = yield* OutboundGuard
      for (
        const [host, message] of [
          ["127.0.0.1", "blocked: loopback address 127.0.0.1"],
          ["localhost", "blocked: loopback address 127.0.0.1"],
          ["[::1]", "blocked: loopback address ::1"],
          ["::ffff:127.0.0.1", "blocked: loopback address ::ffff:127.0.0.1"],
          ["10.0.0.1", "blocked: private address 10.0.0.1"],
          ["169.254.169.254", "blocked: link-local address 169.254.169.254"],
          ["100.100.1.1", "blocked: cgnat address 100.100.1.1"],
          ["0.0.0.0", "blocked: unspecified address 0.0.0.0"]
        ] as const
      ) {
        const error = yield* Effect.flip(guard.resolve(host))
        expect(error._tag).toBe("OutboundBlocked")
        expect(error.message).toBe(message)
      }
    }).pipe(Effect.provide(strict)))

  it.effect("lets a public IP literal through without DNS", () =>
    Effect.gen(function*() {
      const guard = yield* OutboundGuard
      expect(yield* guard.resolve("8.8.8.8")).toEqual([{ address: "8.8.8.8", family: 4 }])
      expect(yield* guard.resolve("[2606:4700:4700::1111]")).toEqual([{ address: "2606:4700:4700::1111", family: 6 }])
    }).pipe(Effect.provide(strict)))

  it.effect("resolves private names when allowed", () =>
    Effect.gen(function*() {
      const guard = yield* OutboundGuard
      const addresses = yield* guard.resolve("localhost")
      expect(addresses.length).toBeGreaterThan(0)
      expect(addresses.every((a) => a.address === "127.0.0.1" || a.address === "::1")).toBe(true)
    }).pipe(Effect.provide(open)))

  it.effect("reports a failed lookup", () =>
    Effect.gen(function*() {
      const guard = yield* OutboundGuard
      const exit = yield* Effect.exit(guard.resolve("does-not-exist.invalid"))
      expect(Exit.isFailure(exit)).toBe(true)
      const error = yield* Effect.flip(guard.resolve("does-not-exist.invalid"))
      expect(error._tag).toBe("OutboundLookupFailed")
      expect(error.message).toMatch(/^DNS lookup failed: \w+ does-not-exist\.invalid$/)
    }).pipe(Effect.provide(strict)))
})

describe("OutboundGuard lookup for net.connect / http.request", () => {
  it.live("refuses a loopback name before any connection is made", () =>
    Effect.gen(function*() {
      const server = yield* tcpServer()
      const guard = makeOutboundGuard({ allowPrivate: false })
      const result = yield* connectWith({ host: "localhost", port: server.port, lookup: guard.lookup })
      expect(result.remoteAddress).toBeUndefined()
      expect(result.error?.code).toBe("ERR_OUTBOUND_BLOCKED")
      expect(result.error?.message).toBe("blocked: loopback address 127.0.0.1")
      expect(result.error?.category).toBe("loopback")
      expect(server.connections()).toBe(0)
    }))

  it.live("connects when the policy allows it", () =>
    Effect.gen(function*() {
      const server = yield* tcpServer()
      const guard = makeOutboundGuard({ allowPrivate: true })
      const result = yield* connectWith({ host: "localhost", port: server.port, lookup: guard.lookup })
      expect(result.error).toBeUndefined()
      expect(result.remoteAddress).toBe("127.0.0.1")
      yield* Effect.sleep("50 millis")
      expect(server.connections()).toBe(1)
    }))

  it.live("blocks http.request through the lookup too", () =>
    Effect.gen(function*() {
      const server = yield* tcpServer()
      const guard = makeOutboundGuard({ allowPrivate: false })
      const error = yield* Effect.callback<NodeJS.ErrnoException>((resume) => {
        const request = Http.get({ host: "localhost", port: server.port, lookup: guard.lookup, agent: false })
        request.on("error", (e) => resume(Effect.succeed(e)))
        request.on("response", () => resume(Effect.die("unexpected response")))
      })
      expect(error.code).toBe("ERR_OUTBOUND_BLOCKED")
      expect(server.connections()).toBe(0)
    }))

  it.live("a pinned lookup connects to the checked address without resolving the name again", () =>
    Effect.gen(function*() {
      const server = yield* tcpServer()
      const guard = makeOutboundGuard({ allowPrivate: true })
      const checked = yield* guard.resolve("127.0.0.1")
      // the name does not resolve at all: only the pinned address can be used
      const result = yield* connectWith({
        host: "pinned.does-not-exist.invalid",
        port: server.port,
        lookup: guard.pinnedLookup(checked)
      })
      expect(result.error).toBeUndefined()
      expect(result.remoteAddress).toBe("127.0.0.1")
      // and without happy eyeballs (single-address form of the callback)
      const single = yield* connectWith({
        host: "pinned.does-not-exist.invalid",
        port: server.port,
        autoSelectFamily: false,
        lookup: guard.pinnedLookup(checked)
      })
      expect(single.remoteAddress).toBe("127.0.0.1")
    }))
})
