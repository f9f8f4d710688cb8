import { NodeHttpClient } from "@effect/platform-node"
import { Config, Effect, Layer, Option, Redacted, Tracer } from "effect"
import { SourceError } from "effect/ConfigProvider"
import { HttpMiddleware } from "effect/http"
import { OtlpExporter, OtlpSerialization, OtlpTracer } from "effect/observability"
import pkg from "../../package.json" with { type: "json" }
import { literal } from "./ConfigLiteral.ts"
import { layerProtobufTraces } from "./OtlpTraceEncoding.ts"
import { RequestTracing } from "./RequestTracing.ts"
import { type Sampler, samplingTracer } from "./Sampling.ts"

export type { Sampler } from "./Sampling.ts"

/**
 * OpenTelemetry traces over OTLP/HTTP, read from the standard `OTEL_*` variables. Effect makes
 * the spans itself: the HTTP server one per request (honouring an incoming `traceparent`),
 * `Effect.fn("X.method")` in services, `effect/sql` one per statement, the cluster one per
 * entity call; this module only chooses where they go and which are kept.
 */
export interface TracingConfig {
  /** The traces URL itself (`…/v1/traces`). */
  readonly url: string
  readonly serviceName: string
  /** `OTEL_EXPORTER_OTLP_HEADERS`: often an API key of the tracing vendor. */
  readonly headers: Redacted.Redacted<Record<string, string>>
  readonly protocol: "http/protobuf" | "http/json"
  readonly sampler: Sampler
  /** `OTEL_BSP_SCHEDULE_DELAY`: how often batched spans are sent, default 5 s. */
  readonly exportIntervalMs?: number | undefined
}

const samplerNames = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio"
] as const

const optional = (name: string) =>
  Config.option(Config.String(name)).pipe(Config.map(Option.filter((value) => value.trim() !== "")))

/** A number, unset when empty (as every optional variable here); anything else is a configuration error. */
const optionalNumber = (name: string) =>
  Effect.flatMap(
    Effect.gen(function*() {
      return yield* optional(name)
    }),
    (text) => {
      if (Option.isNone(text)) return Effect.succeed(Option.none<number>())
      const value = Number(text.value.trim())
      return Number.isFinite(value) ? Effect.succeed(Option.some(value)) : Effect.fail(
        new Config.ConfigError(new SourceError({ message: `${name} must be a number, not '${text.value}'` }))
      )
    }
  )

/** `k1=v1,k2=v2` with URL-encoded values (the OpenTelemetry environment format). */
export const parseHeaders = (text: string): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const entry of text.split(",")) {
    const at = entry.indexOf("=")
    if (at <= 0) continue
    headers[decodeURIComponent(entry.slice(0, at).trim())] = decodeURIComponent(entry.slice(at + 1).trim())
  }
  return headers
}

/** The traces URL: the signal-specific endpoint as it is, the general one with `/v1/traces` appended. */
const tracesUrl = Effect.gen(function*() {
  const specific = yield* optional("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
  if (Option.isSome(specific)) return Option.some(specific.value)
  return Option.map(yield* optional("OTEL_EXPORTER_OTLP_ENDPOINT"), (base) => `${base.replace(/\/+$/, "")}/v1/traces`)
})

/**
 * `none` unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or `…_TRACES_ENDPOINT`) is set and neither
 * `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none` turns it off. The sampler defaults
 * to `parentbased_always_on`, or `parentbased_traceidratio` when only `OTEL_TRACES_SAMPLER_ARG`
 * is given.
 */
export const tracingConfig = Effect.gen(function*() {
  const url = yield* tracesUrl
  const disabled = yield* Config.Boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false))
  const exporter = yield* optional("OTEL_TRACES_EXPORTER")
  if (Option.isNone(url) || disabled || Option.getOrUndefined(exporter)?.trim() === "none") {
    return Option.none<TracingConfig>()
  }
  const argument = yield* optionalNumber("OTEL_TRACES_SAMPLER_ARG")
  const name = yield* literal(
    "OTEL_TRACES_SAMPLER",
    samplerNames,
    Option.isSome(argument) ? "parentbased_traceidratio" : "parentbased_always_on"
  )
  const ratio = Math.min(1, Math.max(0, Option.getOrElse(argument, () => 1)))
  const specificHeaders = yield* optional("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
  const headers = Option.isSome(specificHeaders) ? specificHeaders : yield* optional("OTEL_EXPORTER_OTLP_HEADERS")
  const protocols = ["http/protobuf", "http/json"] as const
  const protocol = Option.isSome(yield* optional("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
    ? yield* literal("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", protocols, "http/protobuf")
    : yield* literal("OTEL_EXPORTER_OTLP_PROTOCOL", protocols, "http/protobuf")
  const config: TracingConfig = {
    url: url.value,
    serviceName: Option.getOrElse(yield* optional("OTEL_SERVICE_NAME"), () => "canopy"),
    headers: Redacted.make(parseHeaders(Option.getOrElse(headers, () => ""))),
    protocol,
    exportIntervalMs: Option.getOrUndefined(yield* optionalNumber("OTEL_BSP_SCHEDULE_DELAY")),
    sampler: {
      parentBased: name.startsWith("parentbased_"),
      root: name.endsWith("always_off") ? "off" : name.endsWith("traceidratio") ? "ratio" : "on",
      ratio
    }
  }
  return Option.some(config)
})

/**
 * The OTLP exporter and the sampling tracer, or nothing when tracing is off (Effect's native
 * tracer then makes spans nobody exports; the HTTP server skips its span altogether, as it
 * does with tracing on, where the edge makes it instead). The
 * exporter flushes what is batched when the app's scope closes.
 */
export const TracingLive = (config: Option.Option<TracingConfig>): Layer.Layer<never> => {
  if (Option.isNone(config)) return Layer.empty
  const { exportIntervalMs, headers, protocol, sampler, serviceName, url } = config.value
  const otlp = Layer.effect(
    Tracer.Tracer,
    Effect.map(
      OtlpTracer.make({
        url,
        resource: { serviceName, serviceVersion: pkg.version },
        headers: Redacted.value(headers),
        exportInterval: exportIntervalMs ?? 5_000
      }),
      (tracer) => samplingTracer(tracer, sampler)
    )
  )
  // Effect's HTTP server never traces: the edge makes the server span of a kept request (`RequestTracing.ts`).
  const requests = Layer.mergeAll(
    Layer.succeed(HttpMiddleware.TracerDisabledWhen)(() => true),
    Layer.succeed(RequestTracing)(true)
  )
  return Layer.merge(otlp, requests).pipe(
    Layer.provide(Layer.mergeAll(
      protocol === "http/json" ? OtlpSerialization.layerJson : layerProtobufTraces,
      // node:http rather than fetch: a process posting a batch-sized body with fetch every second
      // measured 4.7–8.0 µs more CPU per request, with node:http none (docs/decisions.md).
      NodeHttpClient.layerNodeHttp,
      OtlpExporter.layerFlusher
    ))
  )
}
