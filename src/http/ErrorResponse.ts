import { HttpServerResponse } from "effect/http"
import type { ErrorCode, ErrorDetail } from "../../schemas/platform/Errors.ts"

/** The GUIDE §4 error body as a response, for the places that answer outside HttpApi. */
export const errorResponse = (
  status: number,
  error: ErrorCode,
  message: string,
  extra?: { readonly details?: ReadonlyArray<ErrorDetail>; readonly retryAfter?: number }
) => HttpServerResponse.jsonUnsafe({ error, message, ...extra }, { status })

/** The code and sentence for a status that reached the edge without a JSON body. */
export const defaultError = (status: number): { readonly error: ErrorCode; readonly message: string } => {
  switch (status) {
    case 400:
      return { error: "validation_error", message: "The request is malformed" }
    case 401:
      return { error: "unauthorized", message: "Missing, malformed, unknown or revoked credential" }
    case 403:
      return { error: "forbidden", message: "This credential may not do that" }
    case 404:
      return { error: "not_found", message: "No such resource" }
    case 405:
      return { error: "method_not_allowed", message: "This path does not answer this method" }
    case 409:
      return { error: "conflict", message: "The request conflicts with the current state" }
    case 413:
      return { error: "payload_too_large", message: "The request body is over this route's limit" }
    case 415:
      return { error: "unsupported_media_type", message: "Send the body as application/json" }
    case 429:
      return { error: "rate_limited", message: "Too many requests" }
    case 503:
      return { error: "unavailable", message: "The service is briefly unavailable; retry shortly" }
    default:
      return { error: "internal_error", message: "Something went wrong on our side" }
  }
}
