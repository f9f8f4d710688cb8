import { Context, Effect, Layer, Metric } from "effect"
import { ShardId, Sharding } from "effect/cluster"
import { PrometheusMetrics } from "effect/observability"
import { SqlClient } from "effect/sql"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { ciQueueDepth } from "../ci/QueueGauge.ts"
import { outboxConsumerLag } from "../events/ConsumerLag.ts"
import { webhookQueueDepth } from "../webhooks/QueueGauge.ts"
import { family } from "./Metrics.ts"

/** Counting stops here: a gauge only has to say "very large", and the scrape stays cheap. */
const COUNT_CAP = 100_000

const gauge = (name: string, description: string) => Metric.gauge(name, { description })

const webhookQueue = gauge("canopy_webhook_queue_depth", "Webhook deliveries pending (due or waiting for a retry)")
const ciQueue = gauge("canopy_ci_queue_depth", "CI runs queued for a slot")
const outboxLagSeconds = family((labels) =>
  Metric.gauge("canopy_outbox_lag_seconds", {
    description: "Age of the oldest outbox event a consumer has not handled yet (0 when caught up)",
    attributes: labels
  })
)
const outboxLagEvents = family((labels) =>
  Metric.gauge("canopy_outbox_lag_events", {
    description: `Outbox events a consumer has not handled yet (counted up to ${COUNT_CAP})`,
    attributes: labels
  })
)
const shardsHeld = family((labels) =>
  Metric.gauge("canopy_cluster_shards_held", {
    description: "Cluster shards this runner holds, by shard group (default; ci on CI workers)",
    attributes: labels
  })
)
const loopLag = family((labels) =>
  Metric.gauge("canopy_nodejs_eventloop_lag_seconds", {
    description: "Event-loop delay since the previous scrape, by quantile (0.5, 0.99, 1 = max)",
    attributes: labels
  })
)
const heapUsed = gauge("canopy_nodejs_heap_used_bytes", "V8 heap in use")
const heapTotal = gauge("canopy_nodejs_heap_total_bytes", "V8 heap allocated")
const rss = gauge("canopy_nodejs_resident_memory_bytes", "Resident set size of the process")

/**
 * `GET /metrics`' body: the gauges that need a query or a runtime reading are brought up to
 * date first (bounded queries, see each statement), then every metric of the app's registry
 * is rendered in the Prometheus text format. A failing query is logged and leaves its gauge
 * at the last value: the rest of the scrape still answers.
 */
export class MetricsExporter extends Context.Service<MetricsExporter, {
  readonly render: Effect.Effect<string>
}>()("canopy/metrics/MetricsExporter") {
  /** `shards`: the runner's shard groups and their size (layers/Cluster.ts), to count the held ones. */
  static readonly layer = (shards: { readonly groups: ReadonlyArray<string>; readonly perGroup: number }) =>
    Layer.effect(
      MetricsExporter,
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const sharding = yield* Sharding.Sharding
        const loop = monitorEventLoopDelay({ resolution: 10 })
        loop.enable()
        yield* Effect.addFinalizer(() => Effect.sync(() => loop.disable()))

        const set = (metric: Metric.Metric<number, unknown>, value: number, context: Context.Context<never>) =>
          metric.updateUnsafe(value, context)

        const queries = Effect.gen(function*() {
          const context = yield* Effect.context<never>()
          const [webhooks, ci, lags] = yield* Effect.all([
            webhookQueueDepth(sql, COUNT_CAP),
            ciQueueDepth(sql, COUNT_CAP),
            outboxConsumerLag(sql, COUNT_CAP)
          ], { concurrency: 3 })
          set(webhookQueue, webhooks, context)
          set(ciQueue, ci, context)
          for (const lag of lags) {
            set(outboxLagSeconds({ consumer: lag.name }), lag.lagSeconds, context)
            set(outboxLagEvents({ consumer: lag.name }), lag.behind, context)
          }
        }).pipe(Effect.catchCause((cause) => Effect.logWarning("metrics: a scrape-time query failed", cause)))

        const runtime = Effect.withFiber((fiber) => {
          const context = fiber.context
          for (const group of shards.groups) {
            let held = 0
            for (let id = 1; id <= shards.perGroup; id++) {
              if (sharding.hasShardId(ShardId.make(group, id))) held++
            }
            set(shardsHeld({ group }), held, context)
          }
          // The histogram is in nanoseconds; empty (no sample yet) it reports NaN/huge values.
          const seconds = (ns: number) => Number.isFinite(ns) && loop.count > 0 ? ns / 1e9 : 0
          set(loopLag({ quantile: "0.5" }), seconds(loop.percentile(50)), context)
          set(loopLag({ quantile: "0.99" }), seconds(loop.percentile(99)), context)
          set(loopLag({ quantile: "1" }), seconds(loop.max), context)
          loop.reset()
          const memory = process.memoryUsage()
          set(heapUsed, memory.heapUsed, context)
          set(heapTotal, memory.heapTotal, context)
          set(rss, memory.rss, context)
          return Effect.void
        })

        const render = Effect.andThen(
          Effect.andThen(queries, runtime),
          Effect.withFiber((fiber) => Effect.succeed(PrometheusMetrics.formatUnsafe(fiber.context)))
        )
        return MetricsExporter.of({ render })
      })
    )
}
