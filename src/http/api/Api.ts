import { HttpApi, OpenApi } from "effect/http-api"
import pkg from "../../../package.json" with { type: "json" }
import { AdminApi } from "./Admin.ts"
import { CodeOwnersApi } from "./CodeOwners.ts"
import { ComponentsApi } from "./Components.ts"
import { IncidentsApi } from "./Incidents.ts"
import { MeApi } from "./Me.ts"
import { MonitorsApi } from "./Monitors.ts"
import { ObserveApi } from "./Observe.ts"
import { cleanNumbers, withBodyExamples } from "./OpenApiDocs.ts"
import { OrgApi } from "./Org.ts"
import { PerformanceApi } from "./Performance.ts"
import { PullRequestsApi } from "./PullRequests.ts"
import { RepositoriesApi } from "./Repositories.ts"
import { RepositoryIssuesApi } from "./RepositoryIssues.ts"
import { SourceMapsApi } from "./SourceMaps.ts"
import { StatusApi } from "./Status.ts"
import { SubscriptionsApi } from "./Subscriptions.ts"
import { SystemApi } from "./System.ts"
import { RepoWebhooksApi, WebhooksApi } from "./Webhooks.ts"

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
  .add(WebhooksApi)
  .add(RepoWebhooksApi)
  .add(PullRequestsApi)
  .add(CodeOwnersApi)
  .add(RepositoryIssuesApi)

/** The REST contract served by HttpApi; OpenAPI at /openapi.json, docs at /docs. */
export class CanopyApi extends Endpoints
  // Unknown body fields are a 400 naming them, not silently dropped (a typo like `frequncy`).
  .annotate(HttpApi.PayloadParseOptions, { onExcessProperty: "error" })
  .annotateMerge(OpenApi.annotations({
    title: "Canopy API",
    version: pkg.version,
    description: "Uptime & status, error tracking, code hosting and per-plan rate limits",
    transform: (spec) => withBodyExamples(Endpoints)(cleanNumbers(spec) as Record<string, any>)
  }))
{}
