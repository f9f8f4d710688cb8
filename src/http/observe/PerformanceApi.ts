import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { PerformanceQuery, PerformanceStats } from "../../../schemas/observe/Performance.ts"
import { ValidationError } from "../../../schemas/platform/Errors.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication, RequiredScope } from "../tenancy/Security.ts"

/** Performance statistics over ingested spans (spec "Performance statistics"): scope `status:read`. */
export class PerformanceApi extends HttpApiGroup.make("performance").add(
  HttpApiEndpoint.get("stats", "/api/v1/stats/performance", {
    query: PerformanceQuery,
    success: PerformanceStats,
    error: ValidationError
  }).annotate(RequiredScope, "status:read").annotateMerge(
    docs(
      "Performance statistics",
      "Average and p95 latency (ms), span count, error rate (0..1) and daily history of ingested spans, filtered by `from`, `to`, `release`, `environment` and `name`. Scope `status:read`."
    )
  )
).middleware(Authentication) {}
