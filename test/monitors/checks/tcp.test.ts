import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Net from "node:net"
import { check, target } from "./harness.ts"
import { closedPort, listen, tcpServer } from "./servers.ts"

describe("tcp check", () => {
  it.live("an open port is up", () =>
    Effect.gen(function*() {
      const { connections, port } = yield* tcpServer
      const result = yield* check(target({ checkType: "tcp", url: `tcp://127.0.0.1:${port}` }))
      expect(result.status).toBe("up")
      expect(result.error).toBeUndefined()
      expect(result.statusCode).toBeUndefined()
      expect(result.responseTimeMs).toBeLessThan(1000)
      yield* Effect.sleep("50 millis")
      expect(connections()).toBe(1)
      // by name, and IPv6 loopback in brackets
      expect(yield* check(target({ checkType: "tcp", url: `tcp://localhost:${port}` }))).toMatchObject({ status: "up" })
      const server6 = Net.createServer((socket) => socket.end())
      const port6 = yield* listen(server6, "::1")
      expect(yield* check(target({ checkType: "tcp", url: `tcp://[::1]:${port6}` }))).toMatchObject({ status: "up" })
    }))

  it.live("a closed port is connection refused", () =>
    Effect.gen(function*() {
      const port = yield* closedPort
      expect(yield* check(target({ checkType: "tcp", url: `tcp://127.0.0.1:${port}` }))).toMatchObject({
        status: "down",
        error: "connection refused"
      })
    }))

  it.live("a URL without a port is invalid", () =>
    Effect.gen(function*() {
      expect(yield* check(target({ checkType: "tcp", url: "tcp://127.0.0.1" }))).toMatchObject({
        status: "down",
        error: "invalid URL: tcp://127.0.0.1 (expected tcp://host:port)"
      })
    }))
})
