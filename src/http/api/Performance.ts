import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { ValidationError } from "../../../schemas/Errors.ts"
import { PerformanceQuery, PerformanceStats } from "../../../schemas/Performance.ts"
import { Authentication, RequiredScope } from "./Security.ts"

/** Performance statistics over ingested spans (spec "Performance statistics"): scope `status:read`. */
export class PerformanceApi extends HttpApiGroup.make("performance").add(
  HttpApiEndpoint.get("stats", "/api/v1/stats/performance", {
    query: PerformanceQuery,
    success: PerformanceStats,
    error: ValidationError
  }).annotate(RequiredScope, "status:read")
).middleware(Authentication) {}
