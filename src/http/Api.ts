import { HttpApi, OpenApi } from "effect/http-api"
import pkg from "../../package.json" with { type: "json" }
import { AiApi } from "./ai/AiApi.ts"
import { CiApi } from "./ci/CiApi.ts"
import { LifecycleApi } from "./git/LifecycleApi.ts"
import { RepositoriesApi } from "./git/RepositoriesApi.ts"
import { IncidentsApi } from "./incidents/IncidentsApi.ts"
import { RepositoryIssuesApi } from "./issues/RepositoryIssuesApi.ts"
import { MonitorsApi } from "./monitors/MonitorsApi.ts"
import { ObserveApi } from "./observe/ObserveApi.ts"
import { PerformanceApi } from "./observe/PerformanceApi.ts"
import { SourceMapsApi } from "./observe/SourceMapsApi.ts"
import { cleanNumbers, withBodyExamples } from "./platform/OpenApiDocs.ts"
import { withRawRoutes } from "./platform/RawRoutesDocs.ts"
import { SystemApi } from "./platform/SystemApi.ts"
import { AuditApi } from "./protection/AuditApi.ts"
import { BranchProtectionApi } from "./protection/BranchProtectionApi.ts"
import { CommitStatusesApi } from "./protection/CommitStatusesApi.ts"
import { GpgKeysApi } from "./protection/GpgKeysApi.ts"
import { CodeOwnersApi } from "./pulls/CodeOwnersApi.ts"
import { PullRequestsApi } from "./pulls/PullRequestsApi.ts"
import { ComponentsApi } from "./status/ComponentsApi.ts"
import { StatusApi } from "./status/StatusApi.ts"
import { SubscriptionsApi } from "./subscriptions/SubscriptionsApi.ts"
import { AdminApi } from "./tenancy/AdminApi.ts"
import { MeApi } from "./tenancy/MeApi.ts"
import { OrgApi } from "./tenancy/OrgApi.ts"
import { RepoWebhooksApi, WebhooksApi } from "./webhooks/WebhooksApi.ts"

/** Every endpoint group; one `.add` per area. */
const Endpoints = HttpApi.make("canopy")
  .add(SystemApi)
  .add(MeApi)
  .add(OrgApi)
  .add(MonitorsApi)
  .add(AdminApi)
  .add(StatusApi)
  .add(ObserveApi)
  .add(IncidentsApi)
  .add(ComponentsApi)
  .add(SourceMapsApi)
  .add(PerformanceApi)
  .add(SubscriptionsApi)
  .add(RepositoriesApi)
  .add(LifecycleApi)
  .add(WebhooksApi)
  .add(RepoWebhooksApi)
  .add(BranchProtectionApi)
  .add(CommitStatusesApi)
  .add(GpgKeysApi)
  .add(AuditApi)
  .add(PullRequestsApi)
  .add(CodeOwnersApi)
  .add(RepositoryIssuesApi)
  .add(CiApi)
  .add(AiApi)

/** The REST contract served by HttpApi; OpenAPI at /openapi.json, docs at /docs. */
export class CanopyApi extends Endpoints
  // Unknown body fields are a 400 naming them, not silently dropped (a typo like `frequncy`).
  .annotate(HttpApi.PayloadParseOptions, { onExcessProperty: "error" })
  // Unknown query parameters too (`?page=2` must not answer the first page again); endpoints
  // without a query Schema are checked at the edge (StrictQuery.ts).
  .annotate(HttpApi.QueryParseOptions, { onExcessProperty: "error" })
  .annotateMerge(OpenApi.annotations({
    title: "Canopy API",
    version: pkg.version,
    description: "Uptime & status, error tracking, code hosting and per-plan rate limits",
    transform: (spec) => withRawRoutes(withBodyExamples(Endpoints)(cleanNumbers(spec) as Record<string, any>))
  }))
{}
