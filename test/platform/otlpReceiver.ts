import { expect } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import type { TracingConfig } from "../../services/platform/Tracing.ts"
import { eventually } from "../support/wait.ts"

/** One span as OTLP/HTTP JSON carries it, its attributes flattened. */
export interface ReceivedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  readonly kind: number
  readonly attributes: Record<string, unknown>
  readonly serviceName: unknown
}

const valueOf = (value: Record<string, unknown>): unknown =>
  value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue ?? value.arrayValue

const flatten = (list: ReadonlyArray<{ key: string; value: Record<string, unknown> }> | undefined) =>
  Object.fromEntries((list ?? []).map(({ key, value }) => [key, valueOf(value)]))

/**
 * A loopback OTLP/HTTP receiver for JSON bodies (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`):
 * records every span posted to `/v1/traces` and the request headers of each post.
 */
export const startOtlpReceiver = Effect.acquireRelease(
  Effect.callback<{ server: Http.Server; spans: Array<ReceivedSpan>; posts: Array<Http.IncomingHttpHeaders> }>(
    (resume) => {
      const spans: Array<ReceivedSpan> = []
      const posts: Array<Http.IncomingHttpHeaders> = []
      const server = Http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          if (req.url === "/v1/traces") {
            posts.push(req.headers)
            const body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
            for (const resourceSpan of body.resourceSpans ?? []) {
              const serviceName = flatten(resourceSpan.resource?.attributes)["service.name"]
              for (const scopeSpan of resourceSpan.scopeSpans ?? []) {
                for (const span of scopeSpan.spans ?? []) {
                  spans.push({
                    traceId: span.traceId,
                    spanId: span.spanId,
                    parentSpanId: span.parentSpanId || undefined,
                    name: span.name,
                    kind: span.kind,
                    attributes: flatten(span.attributes),
                    serviceName
                  })
                }
              }
            }
          }
          res.statusCode = 200
          res.setHeader("content-type", "application/json")
          res.end("{}")
        })
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ server, spans, posts })))
    }
  ),
  ({ server }) =>
    Effect.callback<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
).pipe(Effect.map(({ posts, server, spans }) => {
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}/v1/traces`, spans, posts }
}))

/** Tracing to `url` as the environment would configure it, exporting every 100 ms. */
export const tracingTo = (url: string, overrides?: Partial<TracingConfig>) =>
  Option.some<TracingConfig>({
    url,
    serviceName: "canopy",
    headers: Redacted.make({ authorization: "Bearer otlp-test-token" }),
    protocol: "http/json",
    sampler: { parentBased: true, root: "on", ratio: 1 },
    exportIntervalMs: 100,
    ...overrides
  })

/** The span and its ancestors, nearest first, as far as they were received. */
export const ancestors = (spans: ReadonlyArray<ReceivedSpan>, span: ReceivedSpan): Array<ReceivedSpan> => {
  const chain: Array<ReceivedSpan> = []
  let parentId = span.parentSpanId
  while (parentId !== undefined) {
    const parent = spans.find((candidate) => candidate.spanId === parentId && candidate.traceId === span.traceId)
    if (parent === undefined) break
    chain.push(parent)
    parentId = parent.parentSpanId
  }
  return chain
}

/** OTLP's `SPAN_KIND_CLIENT`. */
export const CLIENT = 3

/**
 * Checks a delivery's `traceparent` (sampled, in trace `traceId`) and waits for the span it
 * names: the delivery's client span, exported in that trace, with the receiver's 200.
 */
export const expectDeliverySpan = (
  spans: ReadonlyArray<ReceivedSpan>,
  traceparent: string,
  traceId: string
) =>
  Effect.gen(function*() {
    expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
    expect(traceparent.split("-")[1]).toBe(traceId)
    const client = yield* eventually(
      "the delivery's client span",
      Effect.sync(() => spans.find((span) => span.spanId === traceparent.split("-")[2])),
      (span) => span !== undefined
    )
    expect(client!.kind).toBe(CLIENT)
    expect(client!.traceId).toBe(traceId)
    expect(client!.attributes["http.response.status_code"]).toBe(200)
  })
