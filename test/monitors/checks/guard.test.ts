import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { check, target } from "./harness.ts"
import { httpServer, tcpServer, wsServer } from "./servers.ts"

describe("outbound guard in checks", () => {
  const strict = { guard: { allowPrivate: false } }

  it.live("private targets are refused before any connection is made", () =>
    Effect.gen(function*() {
      const v4 = yield* httpServer((_req, _body, res) => res.end("internal"))
      const v6 = yield* httpServer((_req, _body, res) => res.end("internal"), { host: "::1" })
      const cases: ReadonlyArray<readonly [string, string]> = [
        [`http://127.0.0.1:${v4.port}/`, "blocked: loopback address 127.0.0.1"],
        [`http://localhost:${v4.port}/`, "blocked: loopback address 127.0.0.1"],
        [`http://0x7f000001:${v4.port}/`, "blocked: loopback address 127.0.0.1"],
        [`http://[::ffff:127.0.0.1]:${v4.port}/`, "blocked: loopback address ::ffff:7f00:1"],
        [`http://[::1]:${v6.port}/`, "blocked: loopback address ::1"],
        ["http://10.0.0.1/", "blocked: private address 10.0.0.1"],
        ["http://192.168.1.1/admin", "blocked: private address 192.168.1.1"],
        ["http://169.254.169.254/latest/meta-data/", "blocked: link-local address 169.254.169.254"],
        ["http://[fd00::1]/", "blocked: unique-local address fd00::1"],
        ["https://0.0.0.0/", "blocked: unspecified address 0.0.0.0"]
      ]
      for (const [url, error] of cases) {
        const result = yield* check(target({ url }), strict)
        expect({ url, ...result, responseTimeMs: 0 }).toEqual({ url, status: "down", responseTimeMs: 0, error })
        // refused without a network round trip (10.0.0.1 would otherwise hang until the timeout)
        expect(result.responseTimeMs).toBeLessThan(500)
      }
      expect(v4.connections()).toBe(0)
      expect(v6.connections()).toBe(0)
      expect(v4.requests).toHaveLength(0)
      expect(v6.requests).toHaveLength(0)
      // control: the same servers are reachable when private addresses are allowed
      expect(yield* check(target({ url: `http://localhost:${v4.port}/` }))).toMatchObject({ status: "up" })
      expect(yield* check(target({ url: `http://[::1]:${v6.port}/` }))).toMatchObject({ status: "up" })
      expect(v4.requests).toHaveLength(1)
      expect(v6.requests).toHaveLength(1)
    }))

  it.live("every redirect hop is checked: a redirect to a private address is refused", () =>
    Effect.gen(function*() {
      // 127.0.0.1 stands in for a public site: exempted by allowCidrs, while the rest of
      // 127.0.0.0/8 stays blocked. The "internal" server listens on 127.0.0.2.
      const guard = { guard: { allowPrivate: false, allowCidrs: ["127.0.0.1/32"] } }
      const internal = yield* httpServer((_req, _body, res) => res.end("internal secrets"), { host: "127.0.0.2" })
      const publicSite = yield* httpServer((req, _body, res) => {
        const location = req.url === "/to-internal"
          ? `${internal.url}/admin`
          : req.url === "/to-metadata"
          ? "http://169.254.169.254/latest/meta-data/"
          : req.url === "/to-public"
          ? "/landing"
          : undefined
        if (location) res.writeHead(302, { location }).end()
        else res.end("public")
      })
      expect(yield* check(target({ url: `${publicSite.url}/to-public` }), guard)).toMatchObject({
        status: "up",
        statusCode: 200
      })
      expect(yield* check(target({ url: `${publicSite.url}/to-internal` }), guard)).toMatchObject({
        status: "down",
        error: "blocked: loopback address 127.0.0.2"
      })
      expect(yield* check(target({ url: `${publicSite.url}/to-metadata` }), guard)).toMatchObject({
        status: "down",
        error: "blocked: link-local address 169.254.169.254"
      })
      expect(publicSite.requests.map((r) => r.url)).toEqual(["/to-public", "/landing", "/to-internal", "/to-metadata"])
      expect(internal.connections()).toBe(0)
      // control: without the guard the redirect does reach the internal server
      expect(yield* check(target({ url: `${publicSite.url}/to-internal` }))).toMatchObject({ status: "up" })
      expect(internal.requests.map((r) => r.url)).toEqual(["/admin"])
    }))

  it.live("tcp and websocket checks are guarded too", () =>
    Effect.gen(function*() {
      const { connections, port } = yield* tcpServer
      expect(yield* check(target({ checkType: "tcp", url: `tcp://localhost:${port}` }), strict)).toMatchObject({
        status: "down",
        error: "blocked: loopback address 127.0.0.1"
      })
      const wsTarget = yield* wsServer
      expect(
        yield* check(
          target({ checkType: "websocket", url: `${wsTarget.url}/ok`, headers: { "X-Token": "t0k" } }),
          strict
        )
      ).toMatchObject({ status: "down", error: "blocked: loopback address 127.0.0.1" })
      expect(yield* check(target({ checkType: "websocket", url: "wss://10.1.1.1/socket" }), strict)).toMatchObject({
        status: "down",
        error: "blocked: private address 10.1.1.1"
      })
      expect(connections()).toBe(0)
      expect(wsTarget.connections()).toBe(0)
    }))
})
