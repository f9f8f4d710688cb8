import { NodeHttpServer } from "@effect/platform-node"
import { Layer } from "effect"
import { createServer } from "node:http"
import { CheckRecorder } from "../services/monitoring/CheckRecorder.ts"
import { Checker } from "../services/monitoring/checks/Checker.ts"
import { Monitors } from "../services/monitoring/Monitors.ts"
import { Uptime } from "../services/monitoring/Uptime.ts"
import { ApiKeys } from "../services/platform/ApiKeys.ts"
import { AppConfig, type AppConfigShape } from "../services/platform/AppConfig.ts"
import { Events } from "../services/platform/Events.ts"
import { OutboundGuard } from "../services/platform/OutboundGuard.ts"
import { Tenancy } from "../services/platform/Tenancy.ts"
import { StatusSummary } from "../services/status/StatusSummary.ts"
import { Deliveries } from "../services/webhooks/Deliveries.ts"
import { Dispatcher } from "../services/webhooks/Dispatcher.ts"
import { FanOut } from "../services/webhooks/FanOut.ts"
import { Webhooks } from "../services/webhooks/Webhooks.ts"
import { MonitorSchedulingLive } from "../src/entities/MonitorScheduling.ts"
import { OrganizationEntityLayer } from "../src/entities/Organization.ts"
import { WebhookDeliveryLive } from "../src/entities/WebhookDelivery.ts"
import { serveHttp } from "../src/http/HttpApp.ts"
import { ClusterLive } from "./Cluster.ts"
import { DatabaseLive } from "./Database.ts"
import { BlobStoreLive, CryptoLive, MailerLive } from "./Services.ts"

/**
 * The whole service for one configuration: storage, the cluster runner, the domain
 * services, the entities this runner hosts, and the HTTP server on `port`.
 */
export const AppLive = (config: AppConfigShape) => {
  const Base = Layer.mergeAll(BlobStoreLive(config), MailerLive(config), CryptoLive(config), ClusterLive(config)).pipe(
    Layer.provideMerge(DatabaseLive(config)),
    Layer.provideMerge(AppConfig.layerWith(config))
  )
  const Domain = Layer.mergeAll(ApiKeys.layer, Monitors.layer, StatusSummary.layer, FanOut.layer).pipe(
    Layer.provideMerge(Layer.mergeAll(Webhooks.layer, Deliveries.layer)),
    Layer.provideMerge(Uptime.layer),
    Layer.provideMerge(Tenancy.layer),
    Layer.provideMerge(Events.layer)
  )
  const Monitoring = MonitorSchedulingLive().pipe(
    Layer.provideMerge(CheckRecorder.layer),
    Layer.provideMerge(Checker.layer),
    Layer.provideMerge(OutboundGuard.layerFromConfig)
  )
  const WebhookDelivery = WebhookDeliveryLive().pipe(
    Layer.provideMerge(Dispatcher.layer),
    Layer.provideMerge(OutboundGuard.layerFromConfig)
  )
  const Entities = Layer.mergeAll(OrganizationEntityLayer, Monitoring, WebhookDelivery)
  const Http = serveHttp.pipe(
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: config.port, host: config.host }))
  )
  return Layer.mergeAll(Http, Entities).pipe(
    Layer.provideMerge(Domain),
    Layer.provideMerge(Base)
  )
}
