import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { CheckTarget } from "../../../services/monitors/checks/Checker.ts"
import { check, target } from "./harness.ts"
import { closedPort, wsServer } from "./servers.ts"

describe("websocket check", () => {
  const ws = (url: string, overrides: Partial<CheckTarget> = {}) =>
    check(target({ checkType: "websocket", url, headers: { "X-Token": "t0k" }, ...overrides }))

  it.live("a completed handshake is up, and the connection is closed cleanly", () =>
    Effect.gen(function*() {
      const server = yield* wsServer
      const result = yield* ws(`${server.url}/ok`)
      expect(result).toMatchObject({ status: "up", statusCode: 101 })
      expect(result.responseTimeMs).toBeLessThan(1000)
      expect(server.upgrades()).toBe(1)
      yield* Effect.sleep("100 millis")
      expect(server.closes).toEqual([1000])
    }))

  it.live("a refused upgrade is down with the status code", () =>
    Effect.gen(function*() {
      const server = yield* wsServer
      expect(yield* ws(`${server.url}/forbidden`)).toMatchObject({
        status: "down",
        statusCode: 403,
        error: "expected status 101 (WebSocket upgrade), got 403"
      })
      // the custom header is what /ok checks
      expect(yield* ws(`${server.url}/ok`, { headers: {} })).toMatchObject({ status: "down", statusCode: 403 })
    }))

  it.live("a wrong Sec-WebSocket-Accept is down", () =>
    Effect.gen(function*() {
      const server = yield* wsServer
      expect(yield* ws(`${server.url}/bogus`)).toMatchObject({
        status: "down",
        error: "invalid WebSocket handshake: wrong Sec-WebSocket-Accept"
      })
    }))

  it.live("a handshake that never completes times out", () =>
    Effect.gen(function*() {
      const server = yield* wsServer
      const result = yield* ws(`${server.url}/hang`, { timeoutSeconds: 1 })
      expect(result).toMatchObject({ status: "down", error: "timed out after 1s" })
      expect(result.responseTimeMs).toBeGreaterThanOrEqual(990)
    }))

  it.live("a closed port is connection refused", () =>
    Effect.gen(function*() {
      const port = yield* closedPort
      expect(yield* ws(`ws://127.0.0.1:${port}/`)).toMatchObject({ status: "down", error: "connection refused" })
    }))
})
