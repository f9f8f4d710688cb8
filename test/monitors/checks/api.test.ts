import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Zlib from "node:zlib"
import { evaluateAssertion, parseJsonPath } from "../../../services/monitors/checks/api.ts"
import type { CheckAssertion, CheckTarget } from "../../../services/monitors/checks/Checker.ts"
import { check, target } from "./harness.ts"
import { httpServer, json } from "./servers.ts"

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
