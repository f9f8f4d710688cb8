import { Config, Context, Effect, Layer, Option, Redacted } from "effect"
import { literal } from "./ConfigLiteral.ts"
import { type LogFormat, type LogLevelName, logLevels } from "./Logging.ts"
import { type TracingConfig, tracingConfig } from "./Tracing.ts"

/**
 * Every setting Canopy reads from the environment, in one place (the README lists them).
 * Services receive this instead of reading `process.env` themselves.
 */
export interface AppConfigShape {
  readonly port: number
  readonly host: string
  readonly baseUrl: string
  readonly dataDir: string
  readonly databaseUrl: Option.Option<Redacted.Redacted>
  readonly s3: Option.Option<{
    readonly endpoint: string | undefined
    readonly bucket: string
    readonly region: string
    readonly accessKeyId: string | undefined
    readonly secretAccessKey: Redacted.Redacted | undefined
    readonly forcePathStyle: boolean
  }>
  readonly smtpUrl: Option.Option<Redacted.Redacted>
  readonly mailFrom: string
  readonly adminToken: Option.Option<Redacted.Redacted>
  readonly masterKey: Option.Option<Redacted.Redacted>
  readonly region: string
  readonly runnerAddress: Option.Option<{ readonly host: string; readonly port: number }>
  readonly runnerListenAddress: Option.Option<{ readonly host: string; readonly port: number }>
  readonly outboundAllowPrivate: boolean
  /** Proxies (IPs or CIDR networks) whose `X-Forwarded-For` names the client. */
  readonly trustedProxies: ReadonlyArray<string>
  /** `GET /metrics` (docs/operations.md); unset: served on the main port without a token. */
  readonly metrics?: MetricsConfig | undefined
  /** `LOG_FORMAT` (`text` unless `json`) and `LOG_LEVEL` (`info`); absent means the defaults. */
  readonly logFormat?: LogFormat | undefined
  readonly logLevel?: LogLevelName | undefined
  /** OpenTelemetry traces (`OTEL_*` variables, `Tracing.ts`); absent or none means off. */
  readonly tracing?: Option.Option<TracingConfig> | undefined
  /** Webhook delivery timeout; 30 s (spec) unless a test shortens it. Not read from the environment. */
  readonly webhookTimeoutMs?: number | undefined
}

export interface MetricsConfig {
  /** Metrics recorded and served (`METRICS_ENABLED`, default true; off: the overhead benchmark's baseline). */
  readonly enabled: boolean
  /** Bearer token `GET /metrics` requires (`METRICS_TOKEN`). */
  readonly token: Option.Option<Redacted.Redacted>
  /** A port of its own for `/metrics` (`METRICS_PORT`); then the main port does not serve it. */
  readonly port: Option.Option<number>
  /** An `org` label on the per-organization series (`METRICS_PER_ORG`). */
  readonly perOrg: boolean
}

/** The metrics settings, defaulted for a configuration that names none (tests' `testConfig`). */
export const metricsConfigOf = (config: { readonly metrics?: MetricsConfig | undefined }): MetricsConfig =>
  config.metrics ?? { enabled: true, token: Option.none(), port: Option.none(), perOrg: false }

const hostPort = (name: string) =>
  nonEmptyString(name).pipe(
    Config.map(Option.map((value) => {
      const index = value.lastIndexOf(":")
      return index < 0
        ? { host: value, port: 34431 }
        : { host: value.slice(0, index), port: Number(value.slice(index + 1)) }
    }))
  )

/** An empty variable counts as unset, so `FOO=` in a compose file means "use the default". */
const nonEmptyString = (name: string) =>
  Config.option(Config.String(name)).pipe(Config.map(Option.filter((value) => value.trim() !== "")))
const nonEmptyRedacted = (name: string) =>
  Config.option(Config.Redacted(name)).pipe(Config.map(Option.filter((value) => Redacted.value(value).trim() !== "")))
const optionalString = (name: string) => nonEmptyString(name).pipe(Config.map(Option.getOrUndefined))

export const appConfig = Effect.gen(function*() {
  const port = yield* Config.Port("PORT").pipe(Config.withDefault(3000))
  const s3Bucket = yield* nonEmptyString("S3_BUCKET")
  const s3Endpoint = yield* optionalString("S3_ENDPOINT")
  const s3Secret = yield* nonEmptyRedacted("S3_SECRET_ACCESS_KEY")
  const config: AppConfigShape = {
    port,
    host: yield* Config.String("HOST").pipe(Config.withDefault("0.0.0.0")),
    baseUrl: yield* Config.String("BASE_URL").pipe(Config.withDefault(`http://localhost:${port}`)),
    dataDir: yield* Config.String("DATA_DIR").pipe(Config.withDefault("./.data")),
    databaseUrl: yield* nonEmptyRedacted("DATABASE_URL"),
    s3: Option.isSome(s3Bucket) || s3Endpoint !== undefined
      ? Option.some({
        endpoint: s3Endpoint,
        bucket: Option.getOrElse(s3Bucket, () => "canopy"),
        region: yield* Config.String("S3_REGION").pipe(Config.withDefault("us-east-1")),
        accessKeyId: yield* optionalString("S3_ACCESS_KEY_ID"),
        secretAccessKey: Option.getOrUndefined(s3Secret),
        forcePathStyle: yield* Config.Boolean("S3_FORCE_PATH_STYLE").pipe(Config.withDefault(s3Endpoint !== undefined))
      })
      : Option.none(),
    smtpUrl: yield* nonEmptyRedacted("SMTP_URL"),
    mailFrom: yield* Config.String("MAIL_FROM").pipe(Config.withDefault("Canopy <canopy@localhost>")),
    adminToken: yield* nonEmptyRedacted("ADMIN_TOKEN"),
    masterKey: yield* nonEmptyRedacted("MASTER_KEY"),
    region: yield* Config.String("REGION").pipe(Config.withDefault("local")),
    runnerAddress: yield* hostPort("RUNNER_ADDRESS"),
    runnerListenAddress: yield* hostPort("RUNNER_LISTEN_ADDRESS"),
    outboundAllowPrivate: yield* Config.Boolean("OUTBOUND_ALLOW_PRIVATE").pipe(Config.withDefault(false)),
    metrics: {
      enabled: yield* Config.Boolean("METRICS_ENABLED").pipe(Config.withDefault(true)),
      token: yield* nonEmptyRedacted("METRICS_TOKEN"),
      port: yield* Config.option(Config.Port("METRICS_PORT")),
      perOrg: yield* Config.Boolean("METRICS_PER_ORG").pipe(Config.withDefault(false))
    },
    trustedProxies: Option.match(yield* nonEmptyString("TRUSTED_PROXIES"), {
      onNone: () => [],
      onSome: (list) => list.split(",").map((entry) => entry.trim()).filter((entry) => entry !== "")
    }),
    logFormat: yield* literal("LOG_FORMAT", ["text", "json"], "text"),
    logLevel: yield* literal("LOG_LEVEL", logLevels, "info"),
    tracing: yield* tracingConfig
  }
  return config
})

export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()("canopy/platform/AppConfig") {
  static readonly layer = Layer.effect(AppConfig, appConfig)
  static readonly layerWith = (config: AppConfigShape) => Layer.succeed(AppConfig, config)
}
