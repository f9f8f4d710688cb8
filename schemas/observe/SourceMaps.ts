import { Schema } from "effect"

/**
 * Source maps (spec "Source map record"; GUIDE §7).
 *
 * Wire choices where the spec is silent:
 * - `name` names the minified file the map belongs to, as it appears in stack frames: a
 *   full URL, a path, a `~/path` (any host) or a bare file name; a trailing `.map` is dropped.
 *   The record's `filename` is that name.
 * - Uploading a map for a `release` and `name` that already has one replaces it (new `id`).
 */

/** The most a release or file name may hold (Sentry allows 200 characters for releases). */
export const SOURCE_MAP_LIMITS = { release: 200, name: 2048 } as const

export const SourceMapRecord = Schema.Struct({
  id: Schema.String,
  filename: Schema.String,
  release: Schema.String,
  /** Bytes. */
  size: Schema.Int,
  createdAt: Schema.String
})
export type SourceMapRecord = typeof SourceMapRecord.Type

export const SourceMapList = Schema.Struct({
  sourceMaps: Schema.Array(SourceMapRecord),
  count: Schema.Int
})
export type SourceMapList = typeof SourceMapList.Type

const Limit = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 }))
const Offset = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** List query: newest first, optionally one release's maps. */
export const ListSourceMapsQuery = Schema.Struct({
  release: Schema.optional(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(SOURCE_MAP_LIMITS.release))),
  limit: Schema.optional(Limit),
  offset: Schema.optional(Offset)
})
export type ListSourceMapsQuery = typeof ListSourceMapsQuery.Type

/** 413 from a handler (the edge answers the same body when `Content-Length` is already too big). */
export class PayloadTooLarge extends Schema.Error<PayloadTooLarge>("PayloadTooLarge")({
  error: Schema.tag("payload_too_large"),
  message: Schema.String
}, { httpApiStatus: 413 }) {}
