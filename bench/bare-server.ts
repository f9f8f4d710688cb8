import { readFileSync } from "node:fs"
import { createServer } from "node:http"

/**
 * The baseline: plain node:http answering a fixed body, the same bytes, content type and ETag
 * Canopy returns, and a 304 to a request naming that ETag (what any server answering
 * conditional requests must at least do). It sends none of Canopy's other headers (CORS,
 * rate-limit, request id, cache-control): the ratio is what those features cost.
 */
// BODY_FILE for bodies too large for an environment variable (an HTML page).
const body = process.env.BODY_FILE !== undefined ? readFileSync(process.env.BODY_FILE) : process.env.BODY ?? "{}"
const contentType = process.env.CONTENT_TYPE ?? "application/json"
const etag = process.env.ETAG
createServer((request, response) => {
  if (etag !== undefined && request.headers["if-none-match"] === etag) {
    response.writeHead(304, { etag })
    response.end()
    return
  }
  response.writeHead(200, {
    "content-type": contentType,
    "content-length": Buffer.byteLength(body),
    ...(etag === undefined ? {} : { etag })
  })
  response.end(body)
}).listen(Number(process.env.PORT), "127.0.0.1")

// Exit on SIGTERM (the benchmark's stop) instead of dying of it, so `--cpu-prof` writes its profile.
process.once("SIGTERM", () => process.exit(0))
