import { Layer } from "effect"
import { HttpRouter } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { PublicRateLimit } from "../../services/ratelimits/PublicRateLimit.ts"
import { RequestQuota } from "../../services/ratelimits/RequestQuota.ts"
import { AiHandlers } from "./ai/AiHandlers.ts"
import { CanopyApi } from "./Api.ts"
import { ApiRequestContext } from "./ApiRequestContext.ts"
import { CiHandlers } from "./ci/CiHandlers.ts"
import { EdgeMiddleware } from "./Edge.ts"
import { GitRoutes } from "./git/GitRoutes.ts"
import { LifecycleHandlers } from "./git/LifecycleHandlers.ts"
import { RepoRedirects } from "./git/RepoRedirects.ts"
import { RepositoriesHandlers } from "./git/RepositoriesHandlers.ts"
import { IncidentsHandlers } from "./incidents/IncidentsHandlers.ts"
import { RepositoryIssuesHandlers } from "./issues/RepositoryIssuesHandlers.ts"
import { LiveRoutes } from "./live/LiveRoutes.ts"
import { MetricsRoute } from "./metrics/MetricsRoutes.ts"
import { MonitorsHandlers } from "./monitors/MonitorsHandlers.ts"
import { IngestRoute } from "./observe/IngestRoute.ts"
import { ObserveHandlers } from "./observe/ObserveHandlers.ts"
import { PerformanceHandlers } from "./observe/PerformanceHandlers.ts"
import { SentryRoutes } from "./observe/SentryRoutes.ts"
import { SourceMapsHandlers } from "./observe/SourceMapsHandlers.ts"
import { DocsRoutes } from "./platform/DocsRoutes.ts"
import { SystemHandlers } from "./platform/SystemHandlers.ts"
import {
  AuditHandlers,
  BranchProtectionHandlers,
  CommitStatusesHandlers,
  GpgKeysHandlers
} from "./protection/ProtectionHandlers.ts"
import { CodeOwnersHandlers } from "./pulls/CodeOwnersHandlers.ts"
import { PullRequestsHandlers } from "./pulls/PullRequestsHandlers.ts"
import { withRoomForRequests } from "./ServerContext.ts"
import { StatusAssets } from "./status/Assets.ts"
import { ComponentsHandlers } from "./status/ComponentsHandlers.ts"
import { PublicCorsMiddleware } from "./status/PublicCors.ts"
import { PublicStatusRoutes } from "./status/PublicStatusRoutes.ts"
import { StatusHandlers } from "./status/StatusHandlers.ts"
import { StatusPages } from "./status/StatusPage.ts"
import { SubscriptionPages } from "./subscriptions/SubscriptionPages.ts"
import { SubscriptionsHandlers } from "./subscriptions/SubscriptionsHandlers.ts"
import { AdminHandlers } from "./tenancy/AdminHandlers.ts"
import { MeHandlers } from "./tenancy/MeHandlers.ts"
import { OrgHandlers } from "./tenancy/OrgHandlers.ts"
import { AdminAuthenticationLive, AuthenticationLive, PublicRateLimitedLive } from "./tenancy/SecurityLive.ts"
import { TrustedProxiesMiddleware } from "./TrustedProxies.ts"
import { RepoWebhooksHandlers, WebhooksHandlers } from "./webhooks/WebhooksHandlers.ts"

const ApiRoutes = HttpApiBuilder.layer(CanopyApi, { openapiPath: "/openapi.json" }).pipe(
  Layer.provide([SystemHandlers, MeHandlers, OrgHandlers, MonitorsHandlers, AdminHandlers, StatusHandlers]),
  Layer.provide([IncidentsHandlers, ComponentsHandlers]),
  Layer.provide([SourceMapsHandlers, PerformanceHandlers]),
  Layer.provide([ObserveHandlers]),
  Layer.provide([SubscriptionsHandlers]),
  Layer.provide([RepositoriesHandlers, LifecycleHandlers]),
  Layer.provide([WebhooksHandlers, RepoWebhooksHandlers]),
  Layer.provide([BranchProtectionHandlers, CommitStatusesHandlers, GpgKeysHandlers, AuditHandlers]),
  Layer.provide(PullRequestsHandlers),
  Layer.provide(CodeOwnersHandlers),
  Layer.provide(RepositoryIssuesHandlers),
  Layer.provide(CiHandlers),
  Layer.provide(AiHandlers),
  Layer.provide([AuthenticationLive, AdminAuthenticationLive, PublicRateLimitedLive]),
  Layer.provide([RequestQuota.layer, PublicRateLimit.layer]),
  Layer.provide(ApiRequestContext)
)

/**
 * Every HTTP route: the HttpApi endpoints, their docs, and the edge middleware around all of it
 * (which also counts each request for the metrics).
 */
export const HttpAppLive = Layer.mergeAll(
  ApiRoutes,
  DocsRoutes,
  IngestRoute,
  SentryRoutes,
  LiveRoutes,
  SubscriptionPages,
  StatusPages,
  StatusAssets,
  PublicStatusRoutes,
  GitRoutes,
  RepoRedirects,
  EdgeMiddleware,
  TrustedProxiesMiddleware,
  PublicCorsMiddleware,
  MetricsRoute
)

export const serveHttp = withRoomForRequests(HttpRouter.serve(HttpAppLive, { disableLogger: true })).pipe(
  // The status page shares the API's per-IP limits (one memoized instance).
  Layer.provide(PublicRateLimit.layer)
)
