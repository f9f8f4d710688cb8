import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { NotFound } from "../../../schemas/platform/Errors.ts"
import { StatusSummary } from "../../../schemas/status/Status.ts"
import { Slug } from "../../../schemas/tenancy/Tenancy.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { PublicLimit, PublicRateLimited } from "../tenancy/Security.ts"

/** Public status data (no authentication, per-IP limits). */
export class StatusApi extends HttpApiGroup.make("status").add(
  HttpApiEndpoint.get("summary", "/api/v1/status/:slug", {
    params: { slug: Slug },
    success: StatusSummary,
    error: NotFound
  }).annotate(PublicLimit, "status").annotateMerge(
    docs(
      "Public status summary",
      "An organization's overall status, monitors and uptime; no key, limited per client IP."
    )
  )
).middleware(PublicRateLimited) {}
