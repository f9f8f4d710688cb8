import { ByteSize, Cause, Clock, Context, Effect, LogLevel, Option, References, Tracer } from "effect"
import {
  Headers,
  HttpIncomingMessage,
  HttpMethod,
  HttpRouter,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "effect/http"
import { HttpApiError } from "effect/http-api"
import * as SchemaIssue from "effect/SchemaIssue"
import type * as Types from "effect/Types"
import { randomUUID } from "node:crypto"
import { endServerSpan, RequestTracing, startRequestTrace } from "../../services/platform/RequestTracing.ts"
import { allowedMethods } from "./AllowedMethods.ts"
import { defaultError, errorResponse } from "./ErrorResponse.ts"
import { recordHttpRequest } from "./metrics/HttpMetrics.ts"
import { RequestState, type RequestStateShape } from "./RequestState.ts"
import { unexpectedQuery } from "./StrictQuery.ts"
import { isUnavailable, unavailableRetryAfter } from "./Unavailable.ts"

const mebibyte = 1024 * 1024

/** Body limits of GUIDE §4, by path; the first matching prefix wins. */
const bodyLimits: ReadonlyArray<readonly [prefix: string, bytes: number]> = [
  ["/api/v1/observe/sourcemaps", 50 * mebibyte],
  ["/api/v1/observe/ingest", 10 * mebibyte],
  ["/api/", 1 * mebibyte]
]

export const bodyLimitFor = (path: string): number | undefined =>
  bodyLimits.find(([prefix]) => path.startsWith(prefix))?.[1]

const requestIdPattern = /^[A-Za-z0-9._-]{1,64}$/

/**
 * Schema's default wording, except that a struct's own `messageUnexpectedKey` annotation
 * words its excess keys (e.g. a GitHub-style pull request body: say what Canopy calls them).
 */
const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1({
  leafHook: (issue) => {
    if (issue._tag === "UnexpectedKey") {
      const message = issue.ast.annotations?.messageUnexpectedKey
      if (typeof message === "string") return message
    }
    return SchemaIssue.defaultLeafHook(issue)
  }
})

/**
 * A request that fails its Schema (params, query, headers or body): 400 `validation_error`
 * with one `{path, message}` per issue, the path prefixed by where it was (`body.name`).
 */
const validationResponse = (error: HttpApiError.HttpApiSchemaError) => {
  const slot = error.kind === "Payload" ? "body" : error.kind.toLowerCase()
  const details = formatIssues(error.cause.issue).issues.map((issue) => ({
    path: [slot, ...(issue.path ?? []).map((segment) => String(typeof segment === "object" ? segment.key : segment))]
      .join("."),
    message: issue.message
  }))
  const message = details.length === 1
    ? `Invalid ${details[0].path}: ${details[0].message}`
    : `The request ${slot} is invalid`
  return errorResponse(400, "validation_error", message, { details })
}

/** No route matched: a known path with another method is a 405 listing the allowed ones. */
const notFoundOrWrongMethod = (path: string, method: string) => {
  const allowed = allowedMethods(path)
  return allowed.length === 0
    ? errorResponse(404, "not_found", "No such route")
    : errorResponse(405, "method_not_allowed", `${method} is not allowed here; use ${allowed.join(", ")}`).pipe(
      HttpServerResponse.setHeader("allow", allowed.join(", "))
    )
}

const isJsonBody = (response: HttpServerResponse.HttpServerResponse) =>
  response.body._tag !== "Empty" && /json/.test(String((response.body as { contentType?: string }).contentType))

/** An error answered with an image on purpose (the badge's grey "not found") keeps its body. */
const isImageBody = (response: HttpServerResponse.HttpServerResponse) =>
  response.body._tag !== "Empty" && /^image\//.test(String((response.body as { contentType?: string }).contentType))

/** Turns whatever escaped the handlers into the GUIDE §4 body; stack traces stay in the log. */
const responseForCause = (path: string, method: string) => (cause: Cause.Cause<unknown>) =>
  Effect.gen(function*() {
    for (const reason of cause.reasons) {
      const error = Cause.isFailReason(reason) ? reason.error : Cause.isDieReason(reason) ? reason.defect : undefined
      if (HttpServerError.isHttpServerError(error)) {
        if (error.reason._tag === "RouteNotFound") return notFoundOrWrongMethod(path, method)
        if (error.reason._tag === "RequestParseError") {
          return error.reason.reason === "BodyTooLarge"
            ? errorResponse(413, "payload_too_large", "The request body is over this route's limit")
            : errorResponse(400, "validation_error", "The request body could not be read")
        }
      }
      if (HttpApiError.HttpApiSchemaError.is(error) && error.kind !== "Body" && error.kind !== "ResponseHeaders") {
        return validationResponse(error)
      }
      if (HttpApiError.HttpApiPayloadTooLarge.is(error)) {
        return errorResponse(413, "payload_too_large", "The request body is over this route's limit")
      }
    }
    if (Cause.hasInterruptsOnly(cause)) return HttpServerResponse.empty({ status: 499 })
    const transient = cause.reasons.find((reason) =>
      isUnavailable(Cause.isFailReason(reason) ? reason.error : Cause.isDieReason(reason) ? reason.defect : undefined)
    )
    if (transient !== undefined) {
      yield* Effect.logWarning("request failed while the service was briefly unavailable", cause)
      return errorResponse(503, "unavailable", "The service is briefly unavailable; retry shortly", {
        retryAfter: unavailableRetryAfter
      }).pipe(HttpServerResponse.setHeader("retry-after", String(unavailableRetryAfter)))
    }
    yield* Effect.logError("unhandled request failure", cause)
    return errorResponse(500, "internal_error", "Something went wrong on our side")
  })

/** The request's path, without its query. */
const pathOf = (url: string) => {
  const queryAt = url.indexOf("?")
  return queryAt < 0 ? url : url.slice(0, queryAt)
}

/**
 * The response as it leaves: an API error without a JSON body gets the GUIDE §4 one, and
 * every response the request id and the rate-limit headers (one header copy for all of them).
 */
const finish = (response: HttpServerResponse.HttpServerResponse, url: string, state: RequestStateShape) => {
  const normalized = response.status >= 400 && url.startsWith("/api/") && !isJsonBody(response) &&
      !isImageBody(response)
    ? errorResponse(response.status, defaultError(response.status).error, defaultError(response.status).message)
      .pipe(HttpServerResponse.setHeaders(withoutBodyHeaders(response.headers)))
    : response
  const headers = state.rateLimitHeaders
  if (headers === undefined) return HttpServerResponse.setHeader(normalized, "x-request-id", state.requestId)
  headers["x-request-id"] = state.requestId
  return HttpServerResponse.setHeaders(normalized, headers)
}

/**
 * The outermost middleware: request ids, body limits, the rate-limit headers, and the
 * error model everywhere (unknown route 404, bad JSON 400, 413, 415, 500 without traces).
 * It runs on every request: no generator, the path only worked out when it is needed.
 */
export const EdgeMiddleware = HttpRouter.middleware((httpEffect): Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  Types.unhandled,
  HttpServerRequest.HttpServerRequest
> =>
  Effect.withFiber((fiber) => {
    const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
    const incomingId = request.headers["x-request-id"]
    // With tracing on: the request's trace, decided here (the server span when kept).
    const trace = fiber.getRef(RequestTracing) ? startRequestTrace(fiber, request) : undefined
    const span = trace?.server
    const state: RequestStateShape = {
      requestId: incomingId !== undefined && requestIdPattern.test(incomingId) ? incomingId : randomUUID(),
      rateLimitHeaders: undefined,
      span
    }
    span?.attribute("canopy.request_id", state.requestId)
    const url = request.url
    const startedMs = performance.now()
    /** Answered here, before routing: counted under the "unmatched" route. */
    const refuse = (response: HttpServerResponse.HttpServerResponse) => {
      const finished = finish(response, url, state)
      recordHttpRequest("unmatched", request.method, finished.status, startedMs)
      if (span !== undefined) endServerSpan(fiber, span, finished.status)
      return Effect.succeed(finished)
    }
    const limit = HttpMethod.hasBody(request.method) ? bodyLimitFor(pathOf(url)) : undefined
    if (limit !== undefined && Number(request.headers["content-length"] ?? 0) > limit) {
      return refuse(
        errorResponse(413, "payload_too_large", `The request body is over this route's limit of ${limit} bytes`)
      )
    }
    const queryAt = url.indexOf("?")
    if (queryAt >= 0 && url.startsWith("/api/")) {
      const refused = unexpectedQuery(request.method, url.slice(0, queryAt), url.slice(queryAt + 1))
      if (refused !== undefined) return refuse(refused)
    }
    const started = Date.now()
    const answered = Effect.flatMap(
      Effect.catchCause(httpEffect, (cause) => responseForCause(pathOf(url), request.method)(cause)),
      (response) => {
        const finished = finish(response, url, state)
        // The router leaves the matched route in the fiber's context until the request ends.
        const matched = Context.getOrUndefined(fiber.context, HttpRouter.RouteContext)
        recordHttpRequest(matched?.route.path ?? "unmatched", request.method, finished.status, startedMs)
        if (span !== undefined) endServerSpan(fiber, span, finished.status)
        return accessLog(request.method, pathOf(url), finished.status, started, state, finished)
      }
    )
    // One context switch for everything the request adds (each `provideService` is one more on
    // every request): its state, its id on every log line, its body limit, and its trace, which
    // the handler, an error's log and the access log all run in.
    const scoped = Effect.updateContext(answered, (context: Context.Context<never>) => {
      let next = Context.add(context, RequestState, state)
      next = Context.add(next, References.CurrentLogAnnotations, {
        ...Context.get(context, References.CurrentLogAnnotations),
        requestId: state.requestId
      })
      if (limit !== undefined) next = Context.add(next, HttpIncomingMessage.MaxBodySize, ByteSize.bytes(limit))
      return trace === undefined ? next : Context.add(next, Tracer.ParentSpan, trace.parent)
    })
    // A request interrupted before it was answered (the server stopping) still ends its span.
    return span === undefined ? scoped : Effect.onExit(
      scoped,
      (exit) => Effect.sync(() => span.end(fiber.getRef(Clock.Clock).currentTimeNanosUnsafe(), exit))
    )
  }), { global: true })

/**
 * One debug line per request (`LOG_LEVEL=debug`): method, path without its query (a query may
 * carry a key, e.g. Sentry's `sentry_key`), status, duration, request and organization ids.
 */
const accessLog = (
  method: string,
  path: string,
  status: number,
  started: number,
  state: RequestStateShape,
  response: HttpServerResponse.HttpServerResponse
) =>
  Effect.withFiber((fiber) => {
    if (LogLevel.isGreaterThan(fiber.getRef(References.MinimumLogLevel), "Debug")) return Effect.succeed(response)
    const annotations: Record<string, unknown> = {
      requestId: state.requestId,
      method,
      path,
      status,
      durationMs: Date.now() - started
    }
    if (state.orgId !== undefined) annotations.orgId = state.orgId
    return Effect.as(Effect.annotateLogs(Effect.logDebug("request"), annotations), response)
  })

const withoutBodyHeaders = (headers: Headers.Headers) =>
  Headers.remove(Headers.remove(headers, "content-type"), "content-length")

export const clientIp = (request: HttpServerRequest.HttpServerRequest): string =>
  Option.getOrElse(request.remoteAddress, () => "unknown")
