import { Effect, Result, Schema } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpServerResponse } from "effect/http"
import * as SchemaIssue from "effect/SchemaIssue"
import { type PublicEndpoint, PublicRateLimit } from "../../../services/ratelimits/PublicRateLimit.ts"
import { clientIp } from "../Edge.ts"
import { errorResponse } from "../ErrorResponse.ts"
import { rateLimitHeaders } from "../tenancy/SecurityLive.ts"

/**
 * The per-IP limit of a public raw route (GUIDE §5): `allowed` with the rate-limit headers
 * to put on the answer, or the spec's 429 (headers and `Retry-After` included).
 */
export const takePublicLimit = (endpoint: PublicEndpoint, request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const decision = yield* (yield* PublicRateLimit).take(endpoint, clientIp(request))
    const headers = rateLimitHeaders(decision)
    if (decision.allowed) return { allowed: true as const, headers }
    const rejection = errorResponse(
      429,
      "rate_limited",
      `Rate limit of ${decision.limit} requests per minute exceeded`,
      {
        retryAfter: decision.retryAfter
      }
    ).pipe(HttpServerResponse.setHeaders({ ...headers, "retry-after": String(decision.retryAfter) }))
    return { allowed: false as const, rejection }
  })

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * Decodes a raw route's query string against `schema` (unknown parameters are ignored, as
 * image caches add their own); a failure is the GUIDE §4 400 naming each parameter.
 */
export const decodeQuery = <S extends Schema.ConstraintDecoder<unknown> & { readonly fields: object }>(
  schema: S,
  request: HttpServerRequest.HttpServerRequest
): Result.Result<S["Type"], HttpServerResponse.HttpServerResponse> => {
  const params = new URL(request.url, "http://localhost").searchParams
  const input: Record<string, string> = {}
  for (const key of Object.keys(schema.fields)) {
    const value = params.get(key)
    if (value !== null) input[key] = value
  }
  return Result.mapError(Schema.decodeUnknownResult(schema)(input), (error) => {
    const details = formatIssues(error.issue).issues.map((issue) => ({
      path: [
        "query",
        ...(issue.path ?? []).map((segment) => String(typeof segment === "object" ? segment.key : segment))
      ]
        .join("."),
      message: issue.message
    }))
    return errorResponse(
      400,
      "validation_error",
      details.length === 1 ? `Invalid ${details[0].path}: ${details[0].message}` : "The request query is invalid",
      { details }
    )
  })
}
