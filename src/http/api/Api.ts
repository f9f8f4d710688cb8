import { HttpApi, OpenApi } from "effect/http-api"
import { AdminApi } from "./Admin.ts"
import { MeApi } from "./Me.ts"
import { MonitorsApi } from "./Monitors.ts"
import { OrgApi } from "./Org.ts"
import { RepositoriesApi } from "./Repositories.ts"
import { StatusApi } from "./Status.ts"
import { SystemApi } from "./System.ts"

/** The REST contract served by HttpApi; OpenAPI at /openapi.json, docs at /docs. */
export class CanopyApi extends HttpApi.make("canopy")
  .add(SystemApi)
  .add(MeApi)
  .add(OrgApi)
  .add(MonitorsApi)
  .add(AdminApi)
  .add(StatusApi)
  .add(RepositoriesApi)
  .annotateMerge(OpenApi.annotations({
    title: "Canopy API",
    description: "Uptime & status, error tracking, code hosting and per-plan rate limits"
  }))
{}
