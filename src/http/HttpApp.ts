import { Layer } from "effect"
import { HttpRouter } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { CanopyApi } from "./api/Api.ts"
import { ApiRequestContext } from "./ApiRequestContext.ts"
import { EdgeMiddleware } from "./Edge.ts"
import { GitRoutes } from "./git/GitRoutes.ts"
import { AdminHandlers } from "./handlers/Admin.ts"
import {
  AuditHandlers,
  BranchProtectionHandlers,
  CommitStatusesHandlers,
  GpgKeysHandlers
} from "./handlers/BranchProtection.ts"
import { CodeOwnersHandlers } from "./handlers/CodeOwners.ts"
import { ComponentsHandlers } from "./handlers/Components.ts"
import { IncidentsHandlers } from "./handlers/Incidents.ts"
import { MeHandlers } from "./handlers/Me.ts"
import { MonitorsHandlers } from "./handlers/Monitors.ts"
import { ObserveHandlers } from "./handlers/Observe.ts"
import { OrgHandlers } from "./handlers/Org.ts"
import { PerformanceHandlers } from "./handlers/Performance.ts"
import { PullRequestsHandlers } from "./handlers/PullRequests.ts"
import { RepositoriesHandlers } from "./handlers/Repositories.ts"
import { RepositoryIssuesHandlers } from "./handlers/RepositoryIssues.ts"
import { AdminAuthenticationLive, AuthenticationLive, PublicRateLimitedLive } from "./handlers/Security.ts"
import { SourceMapsHandlers } from "./handlers/SourceMaps.ts"
import { StatusHandlers } from "./handlers/Status.ts"
import { SubscriptionsHandlers } from "./handlers/Subscriptions.ts"
import { SystemHandlers } from "./handlers/System.ts"
import { RepoWebhooksHandlers, WebhooksHandlers } from "./handlers/Webhooks.ts"
import { LiveRoutes } from "./live/LiveRoutes.ts"
import { StatusAssets } from "./pages/Assets.ts"
import { StatusPages } from "./pages/StatusPage.ts"
import { SubscriptionPages } from "./pages/SubscriptionPages.ts"
import { PublicStatusRoutes } from "./public/PublicStatusRoutes.ts"
import { PublicRateLimit } from "./PublicRateLimit.ts"
import { RequestQuota } from "./RequestQuota.ts"
import { IngestRoute } from "./sentry/IngestRoute.ts"
import { SentryRoutes } from "./sentry/SentryRoutes.ts"
import { TrustedProxiesMiddleware } from "./TrustedProxies.ts"

const ApiRoutes = HttpApiBuilder.layer(CanopyApi, { openapiPath: "/openapi.json" }).pipe(
  Layer.provide([SystemHandlers, MeHandlers, OrgHandlers, MonitorsHandlers, AdminHandlers, StatusHandlers]),
  Layer.provide([IncidentsHandlers, ComponentsHandlers]),
  Layer.provide([SourceMapsHandlers, PerformanceHandlers]),
  Layer.provide([ObserveHandlers]),
  Layer.provide([SubscriptionsHandlers]),
  Layer.provide(RepositoriesHandlers),
  Layer.provide([WebhooksHandlers, RepoWebhooksHandlers]),
  Layer.provide([BranchProtectionHandlers, CommitStatusesHandlers, GpgKeysHandlers, AuditHandlers]),
  Layer.provide(PullRequestsHandlers),
  Layer.provide(CodeOwnersHandlers),
  Layer.provide(RepositoryIssuesHandlers),
  Layer.provide([AuthenticationLive, AdminAuthenticationLive, PublicRateLimitedLive]),
  Layer.provide([RequestQuota.layer, PublicRateLimit.layer]),
  Layer.provide(ApiRequestContext)
)

/** Every HTTP route: the HttpApi endpoints, their docs, and the edge middleware around all of it. */
export const HttpAppLive = Layer.mergeAll(
  ApiRoutes,
  HttpApiScalar.layer(CanopyApi, { path: "/docs" }),
  IngestRoute,
  SentryRoutes,
  LiveRoutes,
  SubscriptionPages,
  StatusPages,
  StatusAssets,
  PublicStatusRoutes,
  GitRoutes,
  EdgeMiddleware,
  TrustedProxiesMiddleware
)

export const serveHttp = HttpRouter.serve(HttpAppLive, { disableLogger: true }).pipe(
  // The status page shares the API's per-IP limits (one memoized instance).
  Layer.provide(PublicRateLimit.layer)
)
