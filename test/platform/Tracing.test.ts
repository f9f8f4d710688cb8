import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Option, Redacted, Tracer } from "effect"
import { Hex } from "effect/encoding"
import { HttpServerRequest } from "effect/http"
import { startRequestTrace } from "../../services/platform/RequestTracing.ts"
import { keepsTraceId, type Sampler, samplingTracer } from "../../services/platform/Sampling.ts"
import { tracingConfig } from "../../services/platform/Tracing.ts"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { startReceiver } from "../webhooks/receiver.ts"
import {
  ancestors,
  CLIENT,
  expectDeliverySpan,
  type ReceivedSpan,
  startOtlpReceiver,
  tracingTo
} from "./otlpReceiver.ts"

const SERVER = 2

const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
const parentId = "00f067aa0ba902b7"

const serverSpanOf = (spans: ReadonlyArray<ReceivedSpan>, requestId: string) =>
  spans.find((span) => span.kind === SERVER && span.attributes["canopy.request_id"] === requestId)

/**
 * A traced app with a webhook to a receiver, pinged (`POST …/test`) by a caller sending `traceparent`
 * with `flags`; gives back the app, the OTLP receiver, the ping's response and its delivery as received.
 */
const pingWithTraceparent = (slug: string, flags: "01" | "00") =>
  Effect.gen(function*() {
    const otlp = yield* startOtlpReceiver
    const receiver = yield* startReceiver()
    const app = yield* startApp({ tracing: tracingTo(otlp.url) })
    const { key } = yield* bootstrapOrg(app.baseUrl, { slug, plan: "enterprise" })
    const created = yield* request(`${app.baseUrl}/api/v1/webhooks`, {
      method: "POST",
      token: key,
      body: { url: receiver.url(), events: ["*"] }
    })
    expect(created.status).toBe(201)
    const ping = yield* request(`${app.baseUrl}/api/v1/webhooks/${created.body.id}/test`, {
      method: "POST",
      token: key,
      headers: { traceparent: `00-${traceId}-${parentId}-${flags}` }
    })
    expect(ping.status).toBe(202)
    const [delivery] = yield* eventually(
      "the ping",
      Effect.sync(() => receiver.on("/hook")),
      (received) => received.length > 0
    )
    return { app, otlp, ping, delivery }
  })

describe("OpenTelemetry traces over OTLP/HTTP", () => {
  it.live("a request that reaches SQL: a server span with the request id, and SQL spans under it in its trace", () =>
    Effect.gen(function*() {
      const otlp = yield* startOtlpReceiver
      const app = yield* startApp({ tracing: tracingTo(otlp.url) })
      const { key } = yield* bootstrapOrg(app.baseUrl, { slug: "traced" })
      const me = yield* request(`${app.baseUrl}/api/v1/me`, { token: key })
      const monitors = yield* request(`${app.baseUrl}/api/v1/monitors`, { token: key })
      expect(monitors.status).toBe(200)
      const requestId = monitors.headers.get("x-request-id")!

      const server = yield* eventually(
        "the server span",
        Effect.sync(() => serverSpanOf(otlp.spans, requestId)),
        (span) => span !== undefined
      )
      expect(server!.serviceName).toBe("canopy")
      expect(server!.attributes["http.response.status_code"]).toBe(200)
      expect(server!.attributes["http.route"]).toBe("/api/v1/monitors")
      expect(server!.attributes["canopy.org_id"]).toBe(me.body.org.id)
      // Listing reads the table: SQL statements inside the request's trace, under its server span.
      const sqlUnder = () =>
        otlp.spans.filter((span) =>
          span.traceId === server!.traceId && span.kind === CLIENT &&
          typeof span.attributes["db.query.text"] === "string" &&
          ancestors(otlp.spans, span).some((ancestor) => ancestor.spanId === server!.spanId)
        )
      const sql = yield* eventually("an SQL span in the trace", Effect.sync(sqlUnder), (found) => found.length > 0)
      // …reached through a named service span (`Effect.fn`), not straight from the server span.
      const chain = ancestors(otlp.spans, sql[0]).map((span) => span.name)
      expect(chain).toContain("Monitors.list")
      // The exporter sends OTEL_EXPORTER_OTLP_HEADERS.
      expect(otlp.posts[0].authorization).toBe("Bearer otlp-test-token")
    }))

  it.live("an incoming traceparent: the request's spans join that trace under the caller's span", () =>
    Effect.gen(function*() {
      const otlp = yield* startOtlpReceiver
      const app = yield* startApp({ tracing: tracingTo(otlp.url) })
      const health = yield* request(`${app.baseUrl}/healthz`, {
        headers: { traceparent: `00-${traceId}-${parentId}-01` }
      })
      expect(health.status).toBe(200)
      const server = yield* eventually(
        "the server span",
        Effect.sync(() => serverSpanOf(otlp.spans, health.headers.get("x-request-id")!)),
        (span) => span !== undefined
      )
      expect(server!.traceId).toBe(traceId)
      expect(server!.parentSpanId).toBe(parentId)
    }))

  it.live("a webhook's test ping carries a traceparent in the trace of the request that sent it", () =>
    Effect.gen(function*() {
      const { delivery, otlp } = yield* pingWithTraceparent("hooked", "01")
      // The span it names is the delivery's client span, exported in the same trace.
      yield* expectDeliverySpan(otlp.spans, String(delivery.headers.traceparent), traceId)
    }))

  it.live("a monitor's HTTP check sends a traceparent naming its exported client span; none when tracing is off", () =>
    Effect.gen(function*() {
      const otlp = yield* startOtlpReceiver
      const target = yield* startReceiver()
      const monitorOn = (baseUrl: string, path: string) =>
        Effect.gen(function*() {
          const { key } = yield* bootstrapOrg(baseUrl, { slug: `mon${path.slice(1)}` })
          const created = yield* request(`${baseUrl}/api/v1/monitors`, {
            method: "POST",
            token: key,
            body: { name: "traced", url: target.url(path), frequency: 60 }
          })
          expect(created.status).toBe(201)
          const [check] = yield* eventually(
            "the first check",
            Effect.sync(() => target.on(path)),
            (hits) => hits.length > 0
          )
          return check
        })

      const traced = yield* startApp({ tracing: tracingTo(otlp.url) })
      const check = yield* monitorOn(traced.baseUrl, "/on")
      const header = String(check.headers.traceparent)
      expect(header).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
      const client = yield* eventually(
        "the check's client span",
        Effect.sync(() => otlp.spans.find((span) => span.spanId === header.split("-")[2])),
        (span) => span !== undefined
      )
      expect(client).toMatchObject({ kind: CLIENT, name: "GET", traceId: header.split("-")[1] })
      expect(client!.attributes).toMatchObject({ "server.address": "127.0.0.1", "http.response.status_code": 200 })
      // Only the host: a check URL's path or query may hold a token.
      expect(JSON.stringify(client!.attributes)).not.toContain("/on")
      yield* traced.stop

      const untraced = yield* startApp()
      expect((yield* monitorOn(untraced.baseUrl, "/off")).headers.traceparent).toBeUndefined()
    }))

  it.live("sampled at a ratio: each request's trace is kept or dropped whole, on the trace id it carries", () =>
    Effect.gen(function*() {
      const otlp = yield* startOtlpReceiver
      const app = yield* startApp({
        tracing: tracingTo(otlp.url, { sampler: { parentBased: true, root: "ratio", ratio: 0.5 } })
      })
      const { key } = yield* bootstrapOrg(app.baseUrl, { slug: "halfsampled" })
      const requestIds: Array<string> = []
      for (let i = 0; i < 30; i++) {
        const listed = yield* request(`${app.baseUrl}/api/v1/monitors`, { token: key })
        expect(listed.status).toBe(200)
        requestIds.push(listed.headers.get("x-request-id")!)
      }
      yield* app.stop
      const servers = requestIds.flatMap((id) => serverSpanOf(otlp.spans, id) ?? [])
      // Both outcomes happen (all 30 alike: one chance in 2^29).
      expect(servers.length).toBeGreaterThan(0)
      expect(servers.length).toBeLessThan(30)
      for (const server of servers) {
        expect(keepsTraceId(server.traceId, 0.5)).toBe(true)
        // A kept request's SQL spans are exported under its server span.
        expect(
          otlp.spans.some((span) =>
            span.traceId === server.traceId && typeof span.attributes["db.query.text"] === "string"
          )
        ).toBe(true)
      }
      // Nothing of a dropped request is exported: its handler's span only in kept traces, one per kept request.
      const kept = new Set(servers.map((server) => server.traceId))
      const lists = otlp.spans.filter((span) => span.name === "Monitors.list")
      expect(lists.filter((span) => !kept.has(span.traceId))).toEqual([])
      expect(lists.length).toBe(servers.length)
    }))

  it.live("a caller's unsampled traceparent: nothing exported, and the webhook still gets the trace id, unsampled", () =>
    Effect.gen(function*() {
      const { app, delivery, otlp, ping } = yield* pingWithTraceparent("unsampledcaller", "00")
      expect(String(delivery.headers.traceparent)).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-00$`))
      yield* app.stop
      expect(otlp.spans.filter((span) => span.traceId === traceId)).toEqual([])
      expect(serverSpanOf(otlp.spans, ping.headers.get("x-request-id")!)).toBeUndefined()
    }))

  it.live("sampled at ratio 0: nothing is sent, though the exporter flushes on stop", () =>
    Effect.gen(function*() {
      const otlp = yield* startOtlpReceiver
      const app = yield* startApp({
        tracing: tracingTo(otlp.url, { sampler: { parentBased: true, root: "ratio", ratio: 0 } })
      })
      const { key } = yield* bootstrapOrg(app.baseUrl, { slug: "unsampled" })
      for (let i = 0; i < 5; i++) expect((yield* request(`${app.baseUrl}/api/v1/me`, { token: key })).status).toBe(200)
      // Stopping closes the exporter's scope, which sends whatever was batched.
      yield* app.stop
      expect(otlp.spans).toEqual([])
      expect(otlp.posts).toEqual([])
    }))
})

describe("sampling", () => {
  const recorder = () => {
    const decisions: Array<boolean> = []
    const tracer = Tracer.make({
      span: (options) => {
        decisions.push(options.sampled)
        return Tracer.nativeTracer.span(options)
      }
    })
    return { decisions, tracer }
  }
  const options = (parent: Option.Option<Tracer.AnySpan>) => ({
    name: "x",
    parent,
    annotations: Tracer.externalSpan({ traceId, spanId: parentId }).annotations,
    links: [],
    startTime: 0n,
    kind: "server" as const,
    root: false,
    sampled: Option.isNone(parent) || parent.value.sampled
  })
  const remote = (sampled: boolean, id = traceId) =>
    Option.some(Tracer.externalSpan({ traceId: id, spanId: parentId, sampled }))

  it("a trace id is kept below the ratio, by its low bits, the same way every time", () => {
    expect(keepsTraceId("00000000000000000000000000000000", 0.5)).toBe(true)
    expect(keepsTraceId("ffffffffffffffffffffffffffffffff", 0.5)).toBe(false)
    expect(keepsTraceId("ffffffffffffffffffffffffffffffff", 1)).toBe(true)
    expect(keepsTraceId("00000000000000000000000000000000", 0)).toBe(false)
  })

  it("parent-based samplers follow the caller's flag; the others decide for themselves", () => {
    const { decisions, tracer } = recorder()
    const spans = [
      samplingTracer(tracer, { parentBased: true, root: "off", ratio: 1 }).span(options(remote(true))),
      samplingTracer(tracer, { parentBased: true, root: "on", ratio: 1 }).span(options(remote(false))),
      samplingTracer(tracer, { parentBased: false, root: "on", ratio: 1 }).span(options(remote(false))),
      samplingTracer(tracer, { parentBased: false, root: "off", ratio: 1 }).span(options(remote(true))),
      samplingTracer(tracer, { parentBased: true, root: "off", ratio: 1 }).span(options(Option.none()))
    ]
    expect(spans.map((span) => span.sampled)).toEqual([true, false, true, false, false])
    // Only the kept spans reach the exporter's tracer; the dropped ones are cheap local spans.
    expect(decisions).toEqual([true, true])
  })

  it("a request is decided by the same rule as a span; a kept one gets a server span on the trace id it drew", () => {
    const samplers: ReadonlyArray<Sampler> = [
      { parentBased: true, root: "ratio", ratio: 0.5 },
      { parentBased: false, root: "ratio", ratio: 0.5 },
      { parentBased: true, root: "on", ratio: 1 },
      { parentBased: false, root: "off", ratio: 1 }
    ]
    for (const sampler of samplers) {
      const { tracer } = recorder()
      const sampling = samplingTracer(tracer, sampler)
      for (let i = 0; i < 50; i++) {
        const id = Hex.random(32)
        for (const flags of ["01", "00", undefined]) {
          const headers: Record<string, string> = flags === undefined
            ? {}
            : { traceparent: `00-${id}-${parentId}-${flags}` }
          const incoming = HttpServerRequest.fromWeb(new Request("http://canopy.test/api/v1/me?x=1", { headers }))
          const trace = Effect.runSync(
            Effect.withFiber((fiber) => Effect.succeed(startRequestTrace(fiber, incoming))).pipe(
              Effect.withTracer(sampling)
            )
          )
          if (flags !== undefined) {
            // With a caller: kept exactly when a span under the caller's span context would be.
            const caller = remote(flags === "01", id)
            expect(trace.server !== undefined).toBe(sampling.span(options(caller)).sampled)
            expect(trace.parent.traceId).toBe(id)
          }
          if (trace.server !== undefined) {
            // Kept: the handler's spans hang under the server span.
            expect(trace.parent).toBe(trace.server)
            expect(trace.server.sampled).toBe(true)
            expect(trace.server.kind).toBe("server")
            expect(trace.server.attributes.get("url.path")).toBe("/api/v1/me")
            if (sampler.root === "ratio" && flags === undefined) {
              expect(keepsTraceId(trace.server.traceId, sampler.ratio)).toBe(true)
            }
          } else {
            // Dropped: the handler's spans hang under an unsampled parent.
            expect(trace.parent.sampled).toBe(false)
          }
        }
      }
    }
  })

  it("a ratio root is decided on its own trace id, which the span then carries", () => {
    const { tracer } = recorder()
    const sampling = samplingTracer(tracer, { parentBased: true, root: "ratio", ratio: 0.5 })
    const spans = Array.from({ length: 200 }, () => sampling.span(options(Option.none())))
    for (const span of spans) expect(span.sampled).toBe(keepsTraceId(span.traceId, 0.5))
    expect(spans.some((span) => span.sampled)).toBe(true)
    expect(spans.some((span) => !span.sampled)).toBe(true)
  })
})

describe("configuration from the OpenTelemetry variables", () => {
  const read = (env: Record<string, string>) =>
    tracingConfig.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })))

  it.effect("off without an endpoint, or when disabled", () =>
    Effect.gen(function*() {
      expect(Option.isNone(yield* read({}))).toBe(true)
      expect(Option.isNone(yield* read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" })))
        .toBe(true)
      expect(Option.isNone(yield* read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "none" })))
        .toBe(true)
    }))

  it.effect("defaults: service canopy, protobuf, parent-based always on; /v1/traces appended to the base URL", () =>
    Effect.gen(function*() {
      const config = Option.getOrThrow(yield* read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" }))
      expect(config.url).toBe("http://collector:4318/v1/traces")
      expect(config.serviceName).toBe("canopy")
      expect(config.protocol).toBe("http/protobuf")
      expect(config.sampler).toEqual({ parentBased: true, root: "on", ratio: 1 })
      expect(Redacted.value(config.headers)).toEqual({})
    }))

  it.effect("every variable honoured; OTEL_TRACES_SAMPLER_ARG alone means parent-based ratio", () =>
    Effect.gen(function*() {
      const config = Option.getOrThrow(
        yield* read({
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://vendor.example/otlp/traces",
          OTEL_EXPORTER_OTLP_ENDPOINT: "http://ignored:4318",
          OTEL_SERVICE_NAME: "canopy-eu",
          OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=abc%3D%3D,tenant=t1",
          OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
          OTEL_TRACES_SAMPLER_ARG: "0.1",
          OTEL_BSP_SCHEDULE_DELAY: "250"
        })
      )
      expect(config.url).toBe("https://vendor.example/otlp/traces")
      expect(config.serviceName).toBe("canopy-eu")
      expect(Redacted.value(config.headers)).toEqual({ "x-api-key": "abc==", tenant: "t1" })
      expect(config.protocol).toBe("http/json")
      expect(config.sampler).toEqual({ parentBased: true, root: "ratio", ratio: 0.1 })
      expect(config.exportIntervalMs).toBe(250)
      const plain = Option.getOrThrow(
        yield* read({
          OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
          OTEL_TRACES_SAMPLER: "traceidratio",
          OTEL_TRACES_SAMPLER_ARG: "0.5"
        })
      )
      expect(plain.sampler).toEqual({ parentBased: false, root: "ratio", ratio: 0.5 })
    }))

  it.effect("an unknown sampler or a ratio that is no number is a configuration error; empty means unset", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_SAMPLER: "x" }))
      expect(String(error.message)).toContain("parentbased_traceidratio")
      const ratio = yield* Effect.flip(
        read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_SAMPLER_ARG: "a" })
      )
      expect(String(ratio.message)).toContain("OTEL_TRACES_SAMPLER_ARG")
      const empty = Option.getOrThrow(
        yield* read({
          OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
          OTEL_TRACES_SAMPLER: "",
          OTEL_TRACES_SAMPLER_ARG: "",
          OTEL_EXPORTER_OTLP_PROTOCOL: ""
        })
      )
      expect(empty.sampler).toEqual({ parentBased: true, root: "on", ratio: 1 })
      expect(empty.protocol).toBe("http/protobuf")
    }))
})
