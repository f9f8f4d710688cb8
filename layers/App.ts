import { Layer, Option } from "effect"
import { AiLive } from "../services/ai/AiLive.ts"
import { CiLive } from "../services/ci/CiLive.ts"
import { Events } from "../services/events/Events.ts"
import { GitLive } from "../services/git/GitLive.ts"
import { LifecycleLive } from "../services/git/LifecycleLive.ts"
import { Incidents } from "../services/incidents/Incidents.ts"
import { IssuesLive } from "../services/issues/IssuesLive.ts"
import { LiveHub } from "../services/live/LiveHub.ts"
import { MailOutbox } from "../services/mail/MailOutbox.ts"
import { metricsSettingsLayer } from "../services/metrics/Metrics.ts"
import { MetricsExporter } from "../services/metrics/MetricsExporter.ts"
import { CheckRecorder } from "../services/monitors/CheckRecorder.ts"
import { Checker } from "../services/monitors/checks/Checker.ts"
import { MonitorAlerts } from "../services/monitors/MonitorAlerts.ts"
import { Monitors } from "../services/monitors/Monitors.ts"
import { Uptime } from "../services/monitors/Uptime.ts"
import { Alerts } from "../services/observe/Alerts.ts"
import { EventPreparation } from "../services/observe/EventPreparation.ts"
import { IngestWriter } from "../services/observe/IngestWriter.ts"
import { Issues } from "../services/observe/Issues.ts"
import { Performance } from "../services/observe/Performance.ts"
import { SourceMaps } from "../services/observe/SourceMaps.ts"
import { OutboundGuard } from "../services/outbound/OutboundGuard.ts"
import { AppConfig, type AppConfigShape, metricsConfigOf } from "../services/platform/AppConfig.ts"
import { LoggingLive } from "../services/platform/Logging.ts"
import { TracingLive } from "../services/platform/Tracing.ts"
import { ProtectionLive } from "../services/protection/ProtectionLive.ts"
import { PullsLive } from "../services/pulls/PullsLive.ts"
import { Components } from "../services/status/Components.ts"
import { StatusCache } from "../services/status/StatusCache.ts"
import { StatusSummary } from "../services/status/StatusSummary.ts"
import { Challenges } from "../services/subscriptions/Challenges.ts"
import { SigningSecret } from "../services/subscriptions/SigningSecret.ts"
import { SubscriberNotificationsLive } from "../services/subscriptions/SubscriberNotifications.ts"
import { Subscriptions } from "../services/subscriptions/Subscriptions.ts"
import { ApiKeys } from "../services/tenancy/ApiKeys.ts"
import { OrganizationLogo } from "../services/tenancy/OrganizationLogo.ts"
import { Tenancy } from "../services/tenancy/Tenancy.ts"
import { Deliveries } from "../services/webhooks/Deliveries.ts"
import { Dispatcher } from "../services/webhooks/Dispatcher.ts"
import { FanOut } from "../services/webhooks/FanOut.ts"
import { Webhooks } from "../services/webhooks/Webhooks.ts"
import { AiReviewSignals } from "../src/entities/ai/AiReviewSignals.ts"
import { CiCacheExpiryCron } from "../src/entities/ci/CiCacheExpiryCron.ts"
import { CiTriggers } from "../src/entities/ci/CiTriggers.ts"
import { CiWorker } from "../src/entities/ci/CiWorker.ts"
import { EventRetentionCron } from "../src/entities/events/EventRetentionCron.ts"
import { RepositoryEntityLayer } from "../src/entities/git/RepositoryEntity.ts"
import { TrashPurgeCron } from "../src/entities/git/TrashPurgeCron.ts"
import { MonitorSchedulingLive } from "../src/entities/monitors/MonitorScheduling.ts"
import { IngestStreamEntityLayer } from "../src/entities/observe/IngestStreamEntity.ts"
import { SpikeMailer } from "../src/entities/observe/SpikeMailer.ts"
import { PullRequestLive } from "../src/entities/pulls/PullRequestLive.ts"
import { OrganizationEntityLayer } from "../src/entities/ratelimits/OrganizationEntity.ts"
import { WebhookDeliveryLive } from "../src/entities/webhooks/WebhookDelivery.ts"
import { serveHttp } from "../src/http/HttpApp.ts"
import { LiveServer, LiveUpgrades } from "../src/http/live/LiveRoutes.ts"
import { MetricsPortServer } from "../src/http/metrics/MetricsRoutes.ts"
import { PublicFastPath } from "../src/http/status/PublicFastPath.ts"
import { ClusterLive, shardGroups, shardsPerGroup } from "./Cluster.ts"
import { DatabaseLive } from "./Database.ts"
import { BlobStoreLive, CryptoLive, MailerLive } from "./Services.ts"

/**
 * The whole service for one configuration: storage, the cluster runner, the domain
 * services, the entities this runner hosts, and the HTTP server on `port`.
 */
export const AppLive = (config: AppConfigShape) => {
  // Under everything: the tracer and loggers reach every fiber the app starts.
  const Observability = Layer.mergeAll(
    TracingLive(config.tracing ?? Option.none()),
    LoggingLive({ format: config.logFormat ?? "text", level: config.logLevel ?? "info" })
  )
  const Base = Layer.mergeAll(BlobStoreLive(config), MailerLive(config), CryptoLive(config), ClusterLive(config)).pipe(
    Layer.provideMerge(DatabaseLive(config)),
    Layer.provideMerge(AppConfig.layerWith(config)),
    Layer.provideMerge(metricsSettingsLayer(metricsConfigOf(config))),
    Layer.provideMerge(Observability)
  )
  const Domain = Layer.mergeAll(
    ApiKeys.layer,
    Monitors.layer,
    StatusCache.layer,
    GitLive,
    FanOut.layer,
    OrganizationLogo.layer.pipe(Layer.provide(OutboundGuard.layerFromConfig))
  ).pipe(
    Layer.provideMerge(StatusSummary.layer),
    Layer.provideMerge(Layer.mergeAll(Incidents.layer, Components.layer, Webhooks.layer, Deliveries.layer)),
    Layer.provideMerge(Uptime.layer),
    Layer.provideMerge(Tenancy.layer),
    Layer.provideMerge(Events.layer)
  )
  const ObserveExtras = Layer.mergeAll(SourceMaps.layer, Performance.layer)
  const Monitoring = MonitorSchedulingLive({ shardsPerGroup }).pipe(
    Layer.provideMerge(CheckRecorder.layer),
    Layer.provideMerge(Checker.layer),
    Layer.provideMerge(OutboundGuard.layerFromConfig)
  )
  const Observe = Layer.mergeAll(EventPreparation.layer, IngestWriter.layer, Issues.layer, Alerts.layer)
  const WebhookDelivery = WebhookDeliveryLive().pipe(
    Layer.provideMerge(Dispatcher.layer),
    Layer.provideMerge(OutboundGuard.layerFromConfig)
  )
  const Entities = Layer.mergeAll(
    EventRetentionCron,
    OrganizationEntityLayer,
    Monitoring,
    IngestStreamEntityLayer,
    SpikeMailer,
    RepositoryEntityLayer,
    TrashPurgeCron,
    WebhookDelivery,
    PullRequestLive(),
    CiTriggers,
    CiWorker,
    CiCacheExpiryCron,
    AiReviewSignals
  )
  const Subscribing = Layer.mergeAll(Subscriptions.layer, SubscriberNotificationsLive).pipe(
    Layer.provideMerge(Challenges.layer),
    Layer.provideMerge(SigningSecret.layer)
  )
  const Notifications = Layer.mergeAll(MailOutbox.layer, MonitorAlerts.layer)
  // LiveUpgrades after serveHttp: released first, it closes the WebSocket clients.
  const Http = Layer.merge(LiveUpgrades, PublicFastPath).pipe(
    Layer.provideMerge(serveHttp),
    Layer.provideMerge(LiveHub.layer),
    Layer.provideMerge(Subscribing),
    Layer.provideMerge(LiveServer.httpServer({ port: config.port, host: config.host })),
    Layer.provideMerge(LiveServer.layer)
  )
  return Layer.mergeAll(Http, Entities, Notifications, MetricsPortServer).pipe(
    Layer.provideMerge(AiLive),
    Layer.provideMerge(Observe),
    Layer.provideMerge(ObserveExtras),
    Layer.provideMerge(LifecycleLive),
    Layer.provideMerge(PullsLive),
    Layer.provideMerge(IssuesLive),
    Layer.provideMerge(CiLive),
    // Branch protection fills RefUpdateCheck, BranchRules and ProtectedBranches for every caller above.
    Layer.provideMerge(ProtectionLive),
    Layer.provideMerge(MetricsExporter.layer({ groups: shardGroups, perGroup: shardsPerGroup })),
    Layer.provideMerge(Domain),
    Layer.provideMerge(Base)
  )
}
