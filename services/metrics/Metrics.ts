import { Context, Effect, Layer, Metric } from "effect"

/**
 * Canopy's Prometheus metrics (docs/operations.md lists them): Effect `Metric`s rendered by
 * `effect/observability/PrometheusMetrics` at `GET /metrics`.
 *
 * Each labelled series is one `Metric` made once and cached by its label values, so an
 * update costs a Map lookup and no attribute merging. Recorders add the `org` label when the
 * operator asked for it (`METRICS_PER_ORG=true`); services need nothing provided.
 */

export interface MetricsSettingsShape {
  /** Record anything at all (`METRICS_ENABLED`). */
  readonly enabled: boolean
  /** Add an `org` label (organization id) to the per-organization series. */
  readonly perOrg: boolean
}

/**
 * The process's settings, set by `metricsSettingsLayer` when the app starts. Process-wide like
 * the registry itself (Effect's default `MetricRegistry`, which effect/cluster also writes to):
 * a deployment runs one app per process. (A per-app registry in the context was tried: the
 * HttpApi handlers run on a context captured without it, so their series went astray.)
 */
let settings: MetricsSettingsShape = { enabled: true, perOrg: false }

export const metricsSettingsLayer = (next: MetricsSettingsShape) =>
  Layer.effectDiscard(Effect.acquireRelease(
    Effect.sync(() => {
      settings = next
    }),
    () =>
      Effect.sync(() => {
        settings = { enabled: true, perOrg: false }
      })
  ))

/** Whether metrics are recorded at all, for raw paths that record outside `count`. */
export const metricsEnabled = (): boolean => settings.enabled

type Labels = Readonly<Record<string, string>>

/**
 * A metric family: one cached series per combination of label values. A hot path passes the
 * same constant labels object each time; the last one asked for is found without a key.
 */
export const family = <M>(make: (labels: Labels) => M) => {
  const series = new Map<string, M>()
  let lastLabels: Labels | undefined
  let lastSeries: M | undefined
  return (labels: Labels): M => {
    if (labels === lastLabels) return lastSeries!
    let key = ""
    for (const name in labels) key += labels[name] + "\u0000"
    let found = series.get(key)
    if (found === undefined) {
      found = make(labels)
      series.set(key, found)
    }
    lastLabels = labels
    lastSeries = found
    return found
  }
}

const counterFamily = (name: string, description: string) =>
  family((labels) => Metric.counter(name, { description, attributes: labels, incremental: true }))

const histogramFamily = (name: string, description: string, boundaries: ReadonlyArray<number>) =>
  family((labels) => Metric.histogram(name, { description, attributes: labels, boundaries }))

/** Seconds, from 1 ms to 30 s. */
export const latencyBuckets = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

export const httpRequests = counterFamily(
  "canopy_http_requests_total",
  "HTTP requests answered, by route template, method and status"
)
export const httpDuration = histogramFamily(
  "canopy_http_request_duration_seconds",
  "Time from request to response headers, by route template and method",
  latencyBuckets
)
export const rateLimitDecisions = counterFamily(
  "canopy_ratelimit_decisions_total",
  "Rate-limit decisions, by limiter (request: the organization's quota; public: per client IP) and decision"
)
export const monitorChecks = counterFamily(
  "canopy_monitor_checks_total",
  "Monitor check attempts recorded, by check type and result"
)
export const monitorLateness = histogramFamily(
  "canopy_monitor_check_lateness_seconds",
  "How long after its scheduled slot a monitor's first attempt started",
  [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]
)
export const ingestEvents = counterFamily(
  "canopy_ingest_events_total",
  "Ingested events, by outcome (accepted, sampled, dropped) and reason"
)
export const ingestCommitSize = histogramFamily(
  "canopy_ingest_commit_events",
  "Events per ingest group commit",
  [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500]
)
export const ingestCommitDuration = histogramFamily(
  "canopy_ingest_commit_duration_seconds",
  "Duration of one ingest group commit (the write transaction)",
  latencyBuckets
)
export const webhookDeliveries = counterFamily(
  "canopy_webhook_deliveries_total",
  "Webhook delivery attempts, by outcome (success, failure)"
)
export const gitOperations = counterFamily(
  "canopy_git_operations_total",
  "Git smart-HTTP operations served, by operation (push, fetch)"
)
export const gitBytes = counterFamily(
  "canopy_git_bytes_total",
  "Git pack bytes, by direction (received: pushes; sent: fetches)"
)
export const pullRequestMerges = counterFamily(
  "canopy_pull_request_merges_total",
  "Pull requests merged, by strategy"
)

const none: Labels = {}

/** Adds `n` to a counter series; with `org`, labels it when `METRICS_PER_ORG` is on. */
export const count = (
  metric: (labels: Labels) => Metric.Metric<number, unknown>,
  labels: Labels,
  options?: { readonly org?: string | undefined; readonly by?: number | undefined }
): Effect.Effect<void> =>
  settings.enabled
    ? Effect.withFiber((fiber) => {
      metric(withOrg(labels, options?.org)).updateUnsafe(options?.by ?? 1, fiber.context)
      return Effect.void
    })
    : Effect.void

/**
 * `count` of one, synchronously: for hot and raw paths (the public fast path, the request quota),
 * with no effect to run. With `org`, labelled when `METRICS_PER_ORG` is on.
 */
export const countNow = (
  metric: (labels: Labels) => Metric.Metric<number, unknown>,
  labels: Labels,
  org?: string
): void => {
  if (settings.enabled) metric(withOrg(labels, org)).updateUnsafe(1, Context.empty())
}

/** Records one observation in a histogram series. */
export const observe = (
  metric: (labels: Labels) => Metric.Metric<number, unknown>,
  value: number,
  labels: Labels = none
): Effect.Effect<void> =>
  settings.enabled
    ? Effect.withFiber((fiber) => {
      metric(labels).updateUnsafe(value, fiber.context)
      return Effect.void
    })
    : Effect.void

const withOrg = (labels: Labels, org: string | undefined): Labels =>
  org !== undefined && settings.perOrg ? { ...labels, org } : labels
