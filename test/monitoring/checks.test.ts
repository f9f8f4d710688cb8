import { describe, expect, it } from "@effect/vitest"
import dns2 from "dns2"
import { Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import * as Dgram from "node:dgram"
import * as Http from "node:http"
import * as Https from "node:https"
import * as Net from "node:net"
import * as Zlib from "node:zlib"
import { WebSocketServer } from "ws"
import { evaluateAssertion, parseJsonPath } from "../../services/monitoring/checks/api.ts"
import {
  type CheckAssertion,
  Checker,
  type CheckerOptions,
  type CheckResult,
  type CheckTarget
} from "../../services/monitoring/checks/Checker.ts"
import { OutboundGuard, type OutboundGuardOptions } from "../../services/platform/OutboundGuard.ts"

// ---------------------------------------------------------------------------
// harness: run a check through the real layers
// ---------------------------------------------------------------------------

const target = (overrides: Partial<CheckTarget> & Pick<CheckTarget, "url">): CheckTarget => ({
  checkType: "http",
  method: "GET",
  headers: {},
  expectedCode: 200,
  timeoutSeconds: 5,
  ...overrides
})

const check = (
  t: CheckTarget,
  options: { guard?: OutboundGuardOptions; checker?: CheckerOptions } = {}
): Effect.Effect<CheckResult> =>
  Checker.use((checker) => checker.check(t)).pipe(
    Effect.provide(
      Checker.layerWith(options.checker ?? {}).pipe(
        Layer.provide(OutboundGuard.layer(options.guard ?? { allowPrivate: true }))
      )
    )
  )

// ---------------------------------------------------------------------------
// real servers on loopback, closed with the test's scope
// ---------------------------------------------------------------------------

interface SeenRequest {
  readonly method: string
  readonly url: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
}

interface TestServer {
  readonly port: number
  readonly url: string
  readonly requests: Array<SeenRequest>
  readonly connections: () => number
}

const listen = <S extends Net.Server>(server: S, host: string) =>
  Effect.acquireRelease(
    Effect.callback<number>((resume) => {
      server.once("error", (error) => resume(Effect.die(error)))
      server.listen(0, host, () => resume(Effect.succeed((server.address() as Net.AddressInfo).port)))
    }),
    () =>
      Effect.callback<void>((resume) => {
        if ("closeAllConnections" in server) (server as unknown as Http.Server).closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

type Handler = (request: Http.IncomingMessage, body: string, response: Http.ServerResponse) => void

/** An HTTP(S) server that records every request and counts TCP connections. */
const httpServer = (
  handler: Handler,
  options: { host?: string; tls?: { key: string; cert: string } } = {}
): Effect.Effect<TestServer, never, import("effect").Scope.Scope> =>
  Effect.gen(function*() {
    const host = options.host ?? "127.0.0.1"
    const requests: Array<SeenRequest> = []
    let connections = 0
    const onRequest = (request: Http.IncomingMessage, response: Http.ServerResponse) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8")
        requests.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers, body })
        handler(request, body, response)
      })
    }
    const server = options.tls ? Https.createServer(options.tls, onRequest) : Http.createServer(onRequest)
    server.on("connection", () => connections++)
    const port = yield* listen(server, host)
    const urlHost = Net.isIPv6(host) ? `[${host}]` : host
    return {
      port,
      url: `${options.tls ? "https" : "http"}://${urlHost}:${port}`,
      requests,
      connections: () => connections
    }
  })

/** A port nothing listens on (bound, then released). */
const closedPort = Effect.gen(function*() {
  const server = Net.createServer()
  const port = yield* Effect.callback<number>((resume) => {
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as Net.AddressInfo).port)))
  })
  yield* Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
  return port
})

const json = (response: Http.ServerResponse, status: number, value: unknown) => {
  response.writeHead(status, { "content-type": "application/json" })
  response.end(JSON.stringify(value))
}

// ---------------------------------------------------------------------------
// http
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// https
// ---------------------------------------------------------------------------

// A test CA and a certificate for DNS:localhost signed by it (valid until 2126).
const TEST_CA = `-----BEGIN CERTIFICATE-----
MIIBmDCCAT+gAwIBAgIUW0ukY0mdKqzMGrWioHY22gVbEDwwCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwOQ2Fub3B5IFRlc3QgQ0EwIBcNMjYxMTIxMjM1NTAwWhgPMjEy
NjEwMjgyMzU1MDBaMBkxFzAVBgNVBAMMDkNhbm9weSBUZXN0IENBMFkwEwYHKoZI
zj0CAQYIKoZIzj0DAQcDQgAE+cMApREogKQPrPDqWKfcdxnB8CxaAv4JVw0Xdkpk
9olmLlGAQEJibZ3KMYrqgzt7SX9b/6wdCDbuNLwquD/sHqNjMGEwHQYDVR0OBBYE
FAvo4fr/Olf+rF559iNlaYaVefDoMB8GA1UdIwQYMBaAFAvo4fr/Olf+rF559iNl
aYaVefDoMA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49
BAMCA0cAMEQCIDfD7j6f9x2gTSw8Wf4MH8m7koNl7gqur+TZwWwFa35XAiBEM8ay
DCB2ID3MUt7fr8PC/yo5t324a2mZqLw9UEjHIA==
-----END CERTIFICATE-----
`
const LOCALHOST_CERT = `-----BEGIN CERTIFICATE-----
MIIBqTCCAU+gAwIBAgIUTLaa/Ff69o8hU27YbO9UAl6AyFcwCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwOQ2Fub3B5IFRlc3QgQ0EwIBcNMjYxMTIxMjM1NTAwWhgPMjEy
NjEwMjgyMzU1MDBaMBQxEjAQBgNVBAMMCWxvY2FsaG9zdDBZMBMGByqGSM49AgEG
CCqGSM49AwEHA0IABG4tQSauJcJuhphqI+fY7HEi26CixrwR0Wx3MWEXkMLB9c0V
bC120UoG6VH165+050slZ1FyAS0sSg2dd6QeoeijeDB2MBQGA1UdEQQNMAuCCWxv
Y2FsaG9zdDAJBgNVHRMEAjAAMBMGA1UdJQQMMAoGCCsGAQUFBwMBMB0GA1UdDgQW
BBS4lzb6w+WiX8mjLWAcCHBZQwpirTAfBgNVHSMEGDAWgBQL6OH6/zpX/qxeefYj
ZWmGlXnw6DAKBggqhkjOPQQDAgNIADBFAiB5PITGW0zg3kfGIFi2eAoAWykkFmZe
X4ZkNt9r2FRoUQIhAMdrIKFy+nGdxB6N62tjRpgSUHMJ5onAEaa80o5VX5yP
-----END CERTIFICATE-----
`
const LOCALHOST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgwDDKVd/3EZ7QWrj2
uOfKWp3UZrQ1Qc/YGCdf4JgpOT6hRANCAARuLUEmriXCboaYaiPn2OxxItugosa8
EdFsdzFhF5DCwfXNFWwtdtFKBulR9euftOdLJWdRcgEtLEoNnXekHqHo
-----END PRIVATE KEY-----
`

describe("https check", () => {
  const tls = { key: LOCALHOST_KEY, cert: LOCALHOST_CERT }

  it.live("a certificate from an untrusted CA is a TLS error", () =>
    Effect.gen(function*() {
      const server = yield* httpServer((_req, _body, res) => res.end("secret"), { tls })
      const result = yield* check(target({ url: `https://localhost:${server.port}/` }))
      expect(result.status).toBe("down")
      expect(result.error).toMatch(/^TLS error: /)
      expect(server.requests).toHaveLength(0)
    }))

  it.live("with the CA trusted, https is up (name checked against the certificate, connection pinned)", () =>
    Effect.gen(function*() {
      const server = yield* httpServer((_req, _body, res) => res.end("secret"), { tls })
      const result = yield* check(target({ url: `https://localhost:${server.port}/` }), {
        checker: { extraCaCertificates: [TEST_CA] }
      })
      expect(result).toMatchObject({ status: "up", statusCode: 200 })
      expect(server.requests).toHaveLength(1)
    }))

  it.live("a certificate for another name is a TLS error", () =>
    Effect.gen(function*() {
      const server = yield* httpServer((_req, _body, res) => res.end("secret"), { tls })
      const result = yield* check(target({ url: `https://127.0.0.1:${server.port}/` }), {
        checker: { extraCaCertificates: [TEST_CA] }
      })
      expect(result.status).toBe("down")
      expect(result.error).toMatch(/^TLS error: .*(altnames|does not match)/)
    }))
})

// ---------------------------------------------------------------------------
// api
// ---------------------------------------------------------------------------

const API_BODY = {
  status: "ok",
  version: "1.2.3",
  count: 42,
  ratio: "0.5",
  healthy: true,
  nothing: null,
  items: [{ id: "a1", tags: ["x", "y"] }, { id: "b2", tags: [] }],
  nested: { a: { b: true } },
  "odd key": "quoted"
}

describe("api check", () => {
  const apiServer = httpServer((req, _body, res) => {
    switch (req.url) {
      case "/json":
        return json(res, 200, API_BODY)
      case "/gzip": {
        res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" })
        return res.end(Zlib.gzipSync(JSON.stringify(API_BODY)))
      }
      case "/html":
        res.writeHead(200, { "content-type": "text/html" })
        return res.end("<html>maintenance</html>")
      case "/empty":
        res.statusCode = 204
        return res.end()
      case "/error":
        return json(res, 500, { status: "down" })
      default:
        res.writeHead(302, { location: "/json" })
        return res.end()
    }
  })

  const api = (url: string, assertions: ReadonlyArray<CheckAssertion>, overrides: Partial<CheckTarget> = {}) =>
    check(target({ checkType: "api", url, assertions, ...overrides }))

  it.live("passes when every assertion holds, for every operator", () =>
    Effect.gen(function*() {
      const server = yield* apiServer
      const assertions: ReadonlyArray<CheckAssertion> = [
        { path: "$.status", op: "eq", value: "ok" },
        { path: "$.count", op: "eq", value: 42 },
        { path: "$.count", op: "eq", value: "42" },
        { path: "$.healthy", op: "eq", value: true },
        { path: "$.nested", op: "eq", value: { a: { b: true } } },
        { path: "$.items[0].tags", op: "eq", value: ["x", "y"] },
        { path: "$.items[1].id", op: "eq", value: "b2" },
        { path: "$['odd key']", op: "eq", value: "quoted" },
        { path: "$[\"items\"][0][\"id\"]", op: "eq", value: "a1" },
        { path: "$.status", op: "neq", value: "down" },
        { path: "$.missing", op: "neq", value: "anything" },
        { path: "$.version", op: "contains", value: "1.2" },
        { path: "$.items[0].tags", op: "contains", value: "y" },
        { path: "$.nested.a", op: "contains", value: "b" },
        { path: "$.nested.a.b", op: "exists" },
        { path: "$.nothing", op: "exists" },
        { path: "$.items[5]", op: "exists", value: false },
        { path: "$.count", op: "lt", value: 100 },
        { path: "$.ratio", op: "lt", value: 1 },
        { path: "$.count", op: "gt", value: 10 },
        { path: "$.count", op: "gt", value: "41.5" }
      ]
      expect(yield* api(`${server.url}/json`, assertions)).toMatchObject({ status: "up", statusCode: 200 })
      // through a redirect, and with a compressed body
      expect(yield* api(`${server.url}/redirect`, assertions)).toMatchObject({ status: "up", statusCode: 200 })
      expect(yield* api(`${server.url}/gzip`, assertions)).toMatchObject({ status: "up", statusCode: 200 })
    }))

  it.live("names the path, operator, expected and actual value when an assertion fails", () =>
    Effect.gen(function*() {
      const server = yield* apiServer
      const failing: ReadonlyArray<readonly [CheckAssertion, string]> = [
        [{ path: "$.status", op: "eq", value: "down" }, "assertion failed: $.status eq \"down\" (got \"ok\")"],
        [{ path: "$.status", op: "neq", value: "ok" }, "assertion failed: $.status neq \"ok\" (got \"ok\")"],
        [
          { path: "$.version", op: "contains", value: "2.0" },
          "assertion failed: $.version contains \"2.0\" (got \"1.2.3\")"
        ],
        [
          { path: "$.items[1].tags", op: "contains", value: "x" },
          "assertion failed: $.items[1].tags contains \"x\" (got [])"
        ],
        [{ path: "$.items[0].missing", op: "exists" }, "assertion failed: $.items[0].missing exists (got nothing)"],
        [{ path: "$.items[9].id", op: "eq", value: "z" }, "assertion failed: $.items[9].id eq \"z\" (got nothing)"],
        [{ path: "$.status", op: "exists", value: false }, "assertion failed: $.status exists false (got \"ok\")"],
        [{ path: "$.count", op: "lt", value: 10 }, "assertion failed: $.count lt 10 (got 42)"],
        [{ path: "$.count", op: "gt", value: 42 }, "assertion failed: $.count gt 42 (got 42)"],
        [{ path: "$.status", op: "gt", value: 1 }, "assertion failed: $.status gt 1 (got \"ok\")"],
        [{ path: "status", op: "eq", value: "ok" }, "assertion failed: status eq \"ok\" (invalid path)"]
      ]
      for (const [assertion, message] of failing) {
        expect(yield* api(`${server.url}/json`, [assertion])).toEqual({
          status: "down",
          statusCode: 200,
          responseTimeMs: expect.any(Number),
          error: message
        })
      }
      // several failures are all reported
      const both = yield* api(`${server.url}/json`, [
        { path: "$.status", op: "eq", value: "ok" },
        { path: "$.count", op: "eq", value: 1 },
        { path: "$.healthy", op: "eq", value: false }
      ])
      expect(both.error).toBe(
        "assertion failed: $.count eq 1 (got 42); assertion failed: $.healthy eq false (got true)"
      )
    }))

  it.live("a body that is not JSON is down", () =>
    Effect.gen(function*() {
      const server = yield* apiServer
      expect(yield* api(`${server.url}/html`, [])).toMatchObject({
        status: "down",
        statusCode: 200,
        error: "response is not JSON"
      })
      expect(yield* api(`${server.url}/html`, [{ path: "$.status", op: "exists" }])).toMatchObject({
        status: "down",
        error: "response is not JSON"
      })
    }))

  it.live("the status code is checked before the body, and an empty 204 without assertions is fine", () =>
    Effect.gen(function*() {
      const server = yield* apiServer
      expect(yield* api(`${server.url}/error`, [{ path: "$.status", op: "eq", value: "ok" }])).toMatchObject({
        status: "down",
        statusCode: 500,
        error: "expected status 200, got 500"
      })
      expect(yield* api(`${server.url}/empty`, [], { expectedCode: 204 })).toMatchObject({
        status: "up",
        statusCode: 204
      })
    }))

  it("parses the JSONPath subset", () => {
    expect(parseJsonPath("$")).toEqual([])
    expect(parseJsonPath("$.a.b")).toEqual(["a", "b"])
    expect(parseJsonPath("$.items[0].id")).toEqual(["items", 0, "id"])
    expect(parseJsonPath("$['a.b'][\"c\"][12]")).toEqual(["a.b", "c", 12])
    expect(parseJsonPath("a.b")).toBeUndefined()
    expect(parseJsonPath("$.")).toBeUndefined()
    expect(parseJsonPath("$[x]")).toBeUndefined()
    expect(evaluateAssertion({ a: [1, 2] }, { path: "$", op: "exists" })).toBeUndefined()
    expect(evaluateAssertion([{ id: 7 }], { path: "$[0].id", op: "eq", value: 7 })).toBeUndefined()
  })
})

// ---------------------------------------------------------------------------
// tcp
// ---------------------------------------------------------------------------

describe("tcp check", () => {
  it.live("an open port is up", () =>
    Effect.gen(function*() {
      let connections = 0
      const server = Net.createServer((socket) => {
        connections++
        socket.end()
      })
      const port = yield* listen(server, "127.0.0.1")
      const result = yield* check(target({ checkType: "tcp", url: `tcp://127.0.0.1:${port}` }))
      expect(result.status).toBe("up")
      expect(result.error).toBeUndefined()
      expect(result.statusCode).toBeUndefined()
      expect(result.responseTimeMs).toBeLessThan(1000)
      yield* Effect.sleep("50 millis")
      expect(connections).toBe(1)
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

// ---------------------------------------------------------------------------
// dns
// ---------------------------------------------------------------------------

/** A DNS server on 127.0.0.1 (UDP) answering for a small zone, NXDOMAIN for anything else. */
const dnsServer = Effect.acquireRelease(
  Effect.gen(function*() {
    const { Packet } = dns2
    const zone: Record<string, Partial<Record<number, ReadonlyArray<Record<string, unknown>>>>> = {
      "up.canopy.test": {
        [Packet.TYPE.A]: [{ address: "10.1.2.3" }, { address: "10.1.2.4" }],
        [Packet.TYPE.AAAA]: [{ address: "2001:db8::10" }],
        [Packet.TYPE.MX]: [{ exchange: "mail.canopy.test", priority: 10 }],
        [Packet.TYPE.TXT]: [{ data: "v=spf1 -all" }],
        [Packet.TYPE.NS]: [{ ns: "ns1.canopy.test" }]
      },
      "www.canopy.test": { [Packet.TYPE.CNAME]: [{ domain: "up.canopy.test" }] },
      "empty.canopy.test": {}
    }
    const server = dns2.createServer({
      udp: true,
      handle: (request, send) => {
        const response = Packet.createResponseFromRequest(request)
        const [question] = request.questions
        const records = zone[question.name.toLowerCase()]
        if (records === undefined) {
          response.header.rcode = 3 // NXDOMAIN (Packet.RCODE is missing from dns2's types)
        } else {
          for (const record of records[question.type] ?? []) {
            response.answers.push(
              <any> {
                name: question.name,
                type: question.type,
                class: Packet.CLASS.IN,
                ttl: 60,
                ...record
              }
            )
          }
        }
        send(response)
      }
    })
    const addresses = yield* Effect.promise(() => server.listen({ udp: { port: 0, address: "127.0.0.1" } }))
    return { server, address: `127.0.0.1:${addresses.udp!.port}` }
  }),
  ({ server }) => Effect.promise(() => server.close())
)

describe("dns check", () => {
  const dns = (server: string, overrides: Partial<CheckTarget> & Pick<CheckTarget, "url">) =>
    check(target({ checkType: "dns", ...overrides }), { checker: { dnsServers: [server] } })

  it.live("a name with A records is up; expectedValue must be among them", () =>
    Effect.gen(function*() {
      const { address } = yield* dnsServer
      const up = yield* dns(address, { url: "dns://up.canopy.test" })
      expect(up.status).toBe("up")
      expect(up.error).toBeUndefined()
      expect(yield* dns(address, { url: "dns://up.canopy.test", expectedValue: "10.1.2.4" })).toMatchObject({
        status: "up"
      })
      expect(yield* dns(address, { url: "dns://up.canopy.test", expectedValue: "10.9.9.9" })).toMatchObject({
        status: "down",
        error: "expected A record 10.9.9.9, not among the 2 answers"
      })
      // The resolver's answers are not echoed back to the tenant.
      const mismatch = yield* dns(address, { url: "dns://up.canopy.test", expectedValue: "10.9.9.9" })
      expect(mismatch.error).not.toContain("10.1.2.")
    }))

  it.live("NXDOMAIN is down", () =>
    Effect.gen(function*() {
      const { address } = yield* dnsServer
      expect(yield* dns(address, { url: "dns://missing.canopy.test" })).toMatchObject({
        status: "down",
        error: "DNS lookup failed: ENOTFOUND (NXDOMAIN) for missing.canopy.test"
      })
    }))

  it.live("a name without records of the type is down", () =>
    Effect.gen(function*() {
      const { address } = yield* dnsServer
      expect(yield* dns(address, { url: "dns://empty.canopy.test" })).toMatchObject({
        status: "down",
        error: "DNS lookup failed: ENODATA (no A records) for empty.canopy.test"
      })
    }))

  it.live("other record types, with expectedValue", () =>
    Effect.gen(function*() {
      const { address } = yield* dnsServer
      const cases: ReadonlyArray<readonly [Partial<CheckTarget>, "up" | "down", string?]> = [
        [{ dnsRecordType: "AAAA", expectedValue: "2001:0db8:0:0::10" }, "up"],
        [
          { dnsRecordType: "AAAA", expectedValue: "2001:db8::11" },
          "down",
          "expected AAAA record 2001:db8::11, not among the 1 answer"
        ],
        [{ dnsRecordType: "MX", expectedValue: "mail.canopy.test" }, "up"],
        [{ dnsRecordType: "MX", expectedValue: "10 mail.canopy.test." }, "up"],
        [
          { dnsRecordType: "MX", expectedValue: "20 mail.canopy.test" },
          "down",
          "expected MX record 20 mail.canopy.test, not among the 1 answer"
        ],
        [{ dnsRecordType: "TXT", expectedValue: "v=spf1 -all" }, "up"],
        [
          { dnsRecordType: "TXT", expectedValue: "v=spf1 ~all" },
          "down",
          "expected TXT record v=spf1 ~all, not among the 1 answer"
        ],
        [{ dnsRecordType: "NS", expectedValue: "NS1.canopy.test" }, "up"],
        [{ url: "dns://www.canopy.test", dnsRecordType: "CNAME", expectedValue: "up.canopy.test" }, "up"],
        [
          { url: "dns://www.canopy.test", dnsRecordType: "CNAME", expectedValue: "down.canopy.test" },
          "down",
          "expected CNAME record down.canopy.test, not among the 1 answer"
        ]
      ]
      for (const [overrides, status, error] of cases) {
        const result = yield* dns(address, { url: "dns://up.canopy.test", ...overrides })
        expect({ ...overrides, status: result.status, error: result.error }).toEqual({ ...overrides, status, error })
      }
    }))

  it.live("a DNS server that never answers is down within the timeout", () =>
    Effect.gen(function*() {
      const socket = Dgram.createSocket("udp4")
      const port = yield* Effect.acquireRelease(
        Effect.callback<number>((resume) => {
          socket.bind(0, "127.0.0.1", () => resume(Effect.succeed(socket.address().port)))
        }),
        () => Effect.sync(() => socket.close())
      )
      const result = yield* dns(`127.0.0.1:${port}`, { url: "dns://up.canopy.test", timeoutSeconds: 1 })
      expect(result.status).toBe("down")
      expect(result.error).toMatch(/^(timed out after 1s|DNS lookup failed: ETIMEOUT)/)
      expect(result.responseTimeMs).toBeLessThan(1500)
    }))
})

// ---------------------------------------------------------------------------
// websocket
// ---------------------------------------------------------------------------

/** `/ok` upgrades (when `x-token` is right), `/forbidden` answers 403, `/bogus` a wrong accept, `/hang` nothing. */
const wsServer = Effect.gen(function*() {
  const wss = new WebSocketServer({ noServer: true })
  const closes: Array<number> = []
  let upgrades = 0
  wss.on("connection", (socket) => socket.on("close", (code) => closes.push(code)))
  const server = Http.createServer((_req, res) => res.writeHead(426).end())
  let connections = 0
  server.on("connection", () => connections++)
  server.on("upgrade", (request: Http.IncomingMessage, socket: Net.Socket, head: Buffer) => {
    if (request.url === "/ok" && request.headers["x-token"] === "t0k") {
      upgrades++
      wss.handleUpgrade(request, socket, head, (ws) => wss.emit("connection", ws, request))
    } else if (request.url === "/bogus") {
      socket.end(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: bm9wZQ==\r\n\r\n"
      )
    } else if (request.url === "/hang") {
      // never answers; let the socket go once the client gives up
      socket.resume()
      socket.on("end", () => socket.destroy())
    } else {
      socket.end("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    }
  })
  const port = yield* listen(server, "127.0.0.1")
  yield* Effect.addFinalizer(() => Effect.sync(() => wss.close()))
  return { url: `ws://127.0.0.1:${port}`, closes, upgrades: () => upgrades, connections: () => connections }
})

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

// ---------------------------------------------------------------------------
// SSRF
// ---------------------------------------------------------------------------

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
      let connections = 0
      const server = Net.createServer((socket) => {
        connections++
        socket.end()
      })
      const port = yield* listen(server, "127.0.0.1")
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
      expect(connections).toBe(0)
      expect(wsTarget.connections()).toBe(0)
    }))
})
