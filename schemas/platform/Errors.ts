import { Schema } from "effect"

/**
 * The error bodies of GUIDE §4: every failure answers `{error, message, details?}`.
 * Each class carries its HTTP status so HttpApi encodes it with the right code.
 */
export const ErrorDetail = Schema.Struct({ path: Schema.String, message: Schema.String })
export type ErrorDetail = typeof ErrorDetail.Type

const details = Schema.optional(Schema.Array(ErrorDetail))

export class ValidationError extends Schema.Error<ValidationError>("ValidationError")({
  error: Schema.tag("validation_error"),
  message: Schema.String,
  details
}, { httpApiStatus: 400 }) {}

export class Unauthorized extends Schema.Error<Unauthorized>("Unauthorized")({
  error: Schema.tag("unauthorized"),
  message: Schema.String
}, { httpApiStatus: 401 }) {}

export class Forbidden extends Schema.Error<Forbidden>("Forbidden")({
  error: Schema.tag("forbidden"),
  message: Schema.String
}, { httpApiStatus: 403 }) {}

export class NotFound extends Schema.Error<NotFound>("NotFound")({
  error: Schema.tag("not_found"),
  message: Schema.String
}, { httpApiStatus: 404 }) {}

export class Conflict extends Schema.Error<Conflict>("Conflict")({
  error: Schema.tag("conflict"),
  message: Schema.String
}, { httpApiStatus: 409 }) {}

export class RateLimited extends Schema.Error<RateLimited>("RateLimited")({
  error: Schema.tag("rate_limited"),
  message: Schema.String,
  retryAfter: Schema.Int
}, { httpApiStatus: 429 }) {}

/** Error codes that only the global middleware produces (no handler fails with them). */
export type ErrorCode =
  | "validation_error"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "method_not_allowed"
  | "conflict"
  | "payload_too_large"
  | "unsupported_media_type"
  | "rate_limited"
  | "unavailable"
  | "internal_error"
