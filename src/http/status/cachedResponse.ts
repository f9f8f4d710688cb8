import { HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http"
import type { Rendered } from "../../../services/status/StatusCache.ts"

/**
 * How long a browser, CDN or reverse proxy may keep a public status answer: a few seconds
 * fresh, then served stale while one request revalidates, so a proxy in front absorbs a
 * spike and a change still shows within seconds. The RSS feed keeps the spec's 300 s.
 */
export const SHORT_CACHE = "public, max-age=5, stale-while-revalidate=30"
export const FEED_CACHE = "public, max-age=300"

/** Does `If-None-Match` name this ETag (or `*`)? Weak validators compare by their tag. */
export const matchesEtag = (header: string | undefined, etag: string): boolean => {
  if (header === undefined) return false
  if (header.trim() === "*") return true
  for (const candidate of header.split(",")) {
    const tag = candidate.trim()
    if (tag === etag || (tag.startsWith("W/") && tag.slice(2) === etag)) return true
  }
  return false
}

/** The cached bytes as a response, or a 304 when the client already holds them. */
export const cachedResponse = (
  request: HttpServerRequest.HttpServerRequest,
  entry: Rendered,
  cacheControl: string,
  headers: Record<string, string> = {}
): HttpServerResponse.HttpServerResponse => {
  const all = { ...headers, etag: entry.etag, "cache-control": cacheControl, "x-content-type-options": "nosniff" }
  if (entry.status === 200 && matchesEtag(request.headers["if-none-match"], entry.etag)) {
    return HttpServerResponse.empty({ status: 304, headers: all })
  }
  return HttpServerResponse.uint8Array(entry.body, {
    status: entry.status,
    contentType: entry.contentType,
    headers: all
  })
}
