import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as Net from "node:net"
import { check, target } from "./harness.ts"
import { closedPort, httpServer, listen } from "./servers.ts"

describe("http check", () => {
  it.live("200 is up with the status code and a real response time", () =>
    Effect.gen(function*() {
      const server = yield* httpServer((_req, _body, res) => setTimeout(() => res.end("ok"), 150))
      const result = yield* check(target({ url: `${server.url}/health` }))
      expect(result.status).toBe("up")
      expect(result.statusCode).toBe(200)
      expect(result.error).toBeUndefined()
      expect(result.responseTimeMs).toBeGreaterThanOrEqual(145)
      expect(result.responseTimeMs).toBeLessThan(1000)
      expect(server.requests).toHaveLength(1)
      expect(server.requests[0].method).toBe("GET")
      expect(server.requests[0].url).toBe("/health")
      expect(server.requests[0].headers["user-agent"]).toMatch(/^Canopy-Monitor/)
    }))

  it.live("503 is down with the status code", () =>
    Effect.gen(function*() {
      const server = yield* httpServer((_req, _body, res) => {
        res.statusCode = 503
        res.end("maintenance")
      })
      const result = yield* check(target({ url: server.url }))
      expect(result).toMatchObject({ status: "down", statusCode: 503, error: "expected status 200, got 503" })
    }))

  it.live("a non-200 expectedCode is honoured", () =>
    Effect.gen(function*() {
      const server = yield* httpServer((_req, _body, res) => {
        res.statusCode = 404
        res.end()
      })
      expect(yield* check(target({ url: server.url, expectedCode: 404 }))).toMatchObject({
        status: "up",
        statusCode: 404
      })
      expect(yield* check(target({ url: server.url, expectedCode: 200 }))).toMatchObject({
        status: "down",
        statusCode: 404,
        error: "expected status 200, got 404"
      })
    }))

  it.live("a response slower than the timeout is down after about the timeout", () =>
    Effect.gen(function*() {
      const server = yield* httpServer((_req, _body, res) => setTimeout(() => res.end("late"), 3000))
      const result = yield* check(target({ url: server.url, timeoutSeconds: 1 }))
      expect(result.status).toBe("down")
      expect(result.error).toBe("timed out after 1s")
      expect(result.statusCode).toBeUndefined()
      expect(result.responseTimeMs).toBeGreaterThanOrEqual(990)
      expect(result.responseTimeMs).toBeLessThan(1500)
      expect(server.requests).toHaveLength(1)
    }))

  it.live("a body that trickles past the timeout is down too", () =>
    Effect.gen(function*() {
      const server = yield* httpServer((_req, _body, res) => {
        res.writeHead(200)
        res.write("first part")
        setTimeout(() => res.end("rest"), 3000)
      })
      const result = yield* check(target({ url: server.url, timeoutSeconds: 1 }))
      expect(result).toMatchObject({ status: "down", error: "timed out after 1s" })
    }))

  it.effect("timeout and response time are wall-clock time, even under a TestClock", () =>
    Effect.gen(function*() {
      const server = yield* httpServer((req, _body, res) => {
        if (req.url === "/slow") setTimeout(() => res.end("ok"), 300)
      })
      // moving the test clock while a check is in flight does not time it out
      const fiber = yield* Effect.forkChild(check(target({ url: `${server.url}/slow`, timeoutSeconds: 1 })))
      yield* TestClock.adjust("1 hour")
      const slow = yield* Fiber.join(fiber)
      expect(slow).toMatchObject({ status: "up", statusCode: 200 })
      expect(slow.responseTimeMs).toBeGreaterThanOrEqual(295)
      // and a hanging server times out without anyone moving the clock
      const hanging = yield* check(target({ url: `${server.url}/hang`, timeoutSeconds: 1 }))
      expect(hanging).toMatchObject({ status: "down", error: "timed out after 1s" })
      expect(hanging.responseTimeMs).toBeGreaterThanOrEqual(990)
    }))

  it.live("follows up to 5 redirects", () =>
    Effect.gen(function*() {
      const server = yield* httpServer((req, _body, res) => {
        const n = Number(req.url!.split("/")[2])
        if (n > 0) {
          res.writeHead(302, { location: `/r/${n - 1}` })
          res.end()
        } else {
          res.end("landed")
        }
      })
      const ok = yield* check(target({ url: `${server.url}/r/5` }))
      expect(ok).toMatchObject({ status: "up", statusCode: 200 })
      expect(server.requests.map((r) => r.url)).toEqual(["/r/5", "/r/4", "/r/3", "/r/2", "/r/1", "/r/0"])

      server.requests.length = 0
      const tooMany = yield* check(target({ url: `${server.url}/r/6` }))
      expect(tooMany).toMatchObject({ status: "down", statusCode: 302, error: "too many redirects" })
      // the first request plus 5 followed redirects; the 6th is not followed
      expect(server.requests.map((r) => r.url)).toEqual(["/r/6", "/r/5", "/r/4", "/r/3", "/r/2", "/r/1"])
    }))

  it.live("a redirect loop is too many redirects", () =>
    Effect.gen(function*() {
      const server = yield* httpServer((_req, _body, res) => {
        res.writeHead(301, { location: "/loop" })
        res.end()
      })
      expect(yield* check(target({ url: `${server.url}/loop` }))).toMatchObject({
        status: "down",
        error: "too many redirects"
      })
    }))

  it.live("redirects across servers, with relative and absolute locations", () =>
    Effect.gen(function*() {
      const final = yield* httpServer((_req, _body, res) => res.end("final"))
      const first = yield* httpServer((req, _body, res) => {
        res.writeHead(req.url === "/start" ? 307 : 308, {
          location: req.url === "/start" ? "/next" : `${final.url}/end`
        })
        res.end()
      })
      expect(yield* check(target({ url: `${first.url}/start` }))).toMatchObject({ status: "up", statusCode: 200 })
      expect(first.requests.map((r) => r.url)).toEqual(["/start", "/next"])
      expect(final.requests.map((r) => r.url)).toEqual(["/end"])
    }))

  it.live("the timeout covers the whole redirect chain", () =>
    Effect.gen(function*() {
      // each hop answers within 400 ms, four hops together take longer than 1 s
      const server = yield* httpServer((req, _body, res) => {
        const n = Number(req.url!.split("/")[2])
        setTimeout(() => {
          if (n > 0) res.writeHead(302, { location: `/r/${n - 1}` }).end()
          else res.end("done")
        }, 400)
      })
      const result = yield* check(target({ url: `${server.url}/r/3`, timeoutSeconds: 1 }))
      expect(result).toMatchObject({ status: "down", error: "timed out after 1s" })
      expect(result.responseTimeMs).toBeGreaterThanOrEqual(990)
      expect(result.responseTimeMs).toBeLessThan(1500)
      expect(server.requests.length).toBeGreaterThanOrEqual(2)
      expect(server.requests.length).toBeLessThanOrEqual(3)
    }))

  it.live("a redirect status that is the expected code is not followed", () =>
    Effect.gen(function*() {
      const server = yield* httpServer((_req, _body, res) => {
        res.writeHead(301, { location: "/elsewhere" })
        res.end()
      })
      expect(yield* check(target({ url: server.url, expectedCode: 301 }))).toMatchObject({
        status: "up",
        statusCode: 301
      })
      expect(server.requests).toHaveLength(1)
    }))

  it.live("POST sends the body and custom headers", () =>
    Effect.gen(function*() {
      const server = yield* httpServer((req, body, res) => {
        const ok = req.method === "POST" &&
          req.headers["x-canopy-test"] === "yes" &&
          req.headers["authorization"] === "Bearer s3cret" &&
          req.headers["content-type"] === "application/json" &&
          req.headers["content-length"] === String(Buffer.byteLength(body)) &&
          body === "{\"ping\":\"pong\",\"n\":1}"
        res.statusCode = ok ? 201 : 400
        res.end()
      })
      const result = yield* check(target({
        url: `${server.url}/submit`,
        method: "POST",
        headers: { "X-Canopy-Test": "yes", Authorization: "Bearer s3cret" },
        body: "{\"ping\":\"pong\",\"n\":1}",
        expectedCode: 201
      }))
      expect(result).toMatchObject({ status: "up", statusCode: 201 })
      expect(server.requests[0]).toMatchObject({ method: "POST", url: "/submit", body: "{\"ping\":\"pong\",\"n\":1}" })
    }))

  it.live("a given Content-Type is kept and 307 preserves method and body while 303 turns into GET", () =>
    Effect.gen(function*() {
      const server = yield* httpServer((req, _body, res) => {
        if (req.url === "/307") res.writeHead(307, { location: "/echo" }).end()
        else if (req.url === "/303") res.writeHead(303, { location: "/echo" }).end()
        else res.end()
      })
      const post = (path: string) =>
        check(target({
          url: `${server.url}${path}`,
          method: "PUT",
          headers: { "content-type": "text/csv" },
          body: "a,b\n1,2"
        }))
      expect(yield* post("/307")).toMatchObject({ status: "up" })
      expect(server.requests.map((r) => [r.url, r.method, r.body, r.headers["content-type"]])).toEqual([
        ["/307", "PUT", "a,b\n1,2", "text/csv"],
        ["/echo", "PUT", "a,b\n1,2", "text/csv"]
      ])
      server.requests.length = 0
      expect(yield* post("/303")).toMatchObject({ status: "up" })
      expect(server.requests.map((r) => [r.url, r.method, r.body, r.headers["content-type"]])).toEqual([
        ["/303", "PUT", "a,b\n1,2", "text/csv"],
        ["/echo", "GET", "", undefined]
      ])
    }))

  it.live("credentials are not forwarded to another origin on redirect", () =>
    Effect.gen(function*() {
      const other = yield* httpServer((_req, _body, res) => res.end())
      const first = yield* httpServer((_req, _body, res) => res.writeHead(302, { location: other.url }).end())
      yield* check(target({ url: first.url, headers: { Authorization: "Bearer s3cret", "X-Other": "kept" } }))
      expect(first.requests[0].headers.authorization).toBe("Bearer s3cret")
      expect(other.requests[0].headers.authorization).toBeUndefined()
      expect(other.requests[0].headers["x-other"]).toBe("kept")
    }))

  it.live("a closed port is connection refused", () =>
    Effect.gen(function*() {
      const port = yield* closedPort
      const result = yield* check(target({ url: `http://127.0.0.1:${port}/` }))
      expect(result).toMatchObject({ status: "down", error: "connection refused" })
      expect(result.statusCode).toBeUndefined()
    }))

  it.live("an unresolvable name is a DNS failure", () =>
    Effect.gen(function*() {
      const result = yield* check(target({ url: "http://no-such-host.invalid/" }))
      expect(result.status).toBe("down")
      expect(result.error).toMatch(/^DNS lookup failed: \w+ no-such-host\.invalid$/)
    }))

  it.live("a server that closes without answering, or answers garbage, is down", () =>
    Effect.gen(function*() {
      const hangUp = Net.createServer((socket) => socket.destroy())
      const hangUpPort = yield* listen(hangUp, "127.0.0.1")
      expect(yield* check(target({ url: `http://127.0.0.1:${hangUpPort}/` }))).toMatchObject({
        status: "down",
        error: "connection closed before a response"
      })
      const garbage = Net.createServer((socket) => {
        socket.resume()
        socket.end("SMTP ready\r\n\r\n")
      })
      const garbagePort = yield* listen(garbage, "127.0.0.1")
      const result = yield* check(target({ url: `http://127.0.0.1:${garbagePort}/` }))
      expect(result.status).toBe("down")
      expect(result.error).toMatch(/^invalid HTTP response: /)
    }))

  it.live("rejects unsupported URLs", () =>
    Effect.gen(function*() {
      expect(yield* check(target({ url: "ftp://example.com/" }))).toMatchObject({
        status: "down",
        error: "unsupported URL scheme ftp: (expected http: or https:)"
      })
      expect(yield* check(target({ url: "not a url" }))).toMatchObject({
        status: "down",
        error: "invalid URL: not a url"
      })
    }))
})
