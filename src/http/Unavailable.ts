import { isSqlError } from "effect/sql/SqlError"

/** Cluster failures that mean "try again in a moment": a shard moving, a runner going away. */
const transientClusterErrors = new Set([
  "EntityNotAssignedToRunner",
  "RunnerUnavailable",
  "RunnerNotRegistered",
  "MailboxFull",
  "PersistenceError"
])

/**
 * Whether a failure is the platform being briefly unavailable rather than a bug: a
 * retryable database failure (connection lost, deadlock, serialization conflict, lock or
 * statement timeout), no connection to be had, or a transient cluster error, possibly wrapped.
 * The edge answers these with 503 and `Retry-After` (docs/decisions.md, error policy).
 */
export const isUnavailable = (error: unknown, depth = 0): boolean => {
  if (depth > 4 || typeof error !== "object" || error === null) return false
  // Retryable, or any failure to open a connection (the server refusing new connections
  // reports its own SQLSTATE, which is not classified as a connection error).
  if (isSqlError(error)) return error.isRetryable || error.reason.operation === "connect"
  const tag = (error as { readonly _tag?: unknown })._tag
  if (typeof tag === "string" && transientClusterErrors.has(tag)) return true
  return isUnavailable((error as { readonly cause?: unknown }).cause, depth + 1)
}

/** Seconds a client should wait before retrying a 503. */
export const unavailableRetryAfter = 2
