import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { createHash } from "node:crypto"
import * as Fs from "node:fs"
import { fileURLToPath } from "node:url"

/**
 * The status page's static files, all served by Canopy itself (no CDN): its stylesheet,
 * script and icon, and the ALTCHA widget from the `altcha` package. Read once at start-up,
 * served with an ETag and a one-hour cache.
 */
const own = (name: string) => fileURLToPath(new URL(`./assets/${name}`, import.meta.url))
const altchaWidget = fileURLToPath(new URL("./altcha.min.js", import.meta.resolve("altcha")))

const files: ReadonlyArray<readonly [name: string, path: string, contentType: string]> = [
  ["status.css", own("status.css"), "text/css; charset=utf-8"],
  ["status.js", own("status.js"), "text/javascript; charset=utf-8"],
  ["altcha.js", altchaWidget, "text/javascript; charset=utf-8"],
  ["favicon.svg", own("favicon.svg"), "image/svg+xml"]
]

export const StatusAssets = Layer.unwrap(Effect.sync(() => {
  const routes = files.map(([name, path, contentType]) => {
    const body = Fs.readFileSync(path)
    const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 16)}"`
    return HttpRouter.add("GET", `/status-assets/${name}`, (request) =>
      Effect.succeed(
        request.headers["if-none-match"] === etag
          ? HttpServerResponse.empty({ status: 304, headers: { etag } })
          : HttpServerResponse.uint8Array(body, {
            contentType,
            headers: { etag, "cache-control": "public, max-age=3600", "x-content-type-options": "nosniff" }
          })
      ))
  })
  // Browsers ask for /favicon.ico whatever the page links: the same icon, never a 404.
  const icon = Fs.readFileSync(own("favicon.svg"))
  const iconEtag = `"${createHash("sha256").update(icon).digest("base64url").slice(0, 16)}"`
  const favicon = HttpRouter.add("GET", "/favicon.ico", (request) =>
    Effect.succeed(
      request.headers["if-none-match"] === iconEtag
        ? HttpServerResponse.empty({ status: 304, headers: { etag: iconEtag } })
        : HttpServerResponse.uint8Array(icon, {
          contentType: "image/svg+xml",
          headers: { etag: iconEtag, "cache-control": "public, max-age=86400", "x-content-type-options": "nosniff" }
        })
    ))
  return Layer.mergeAll(favicon, ...(routes as [typeof routes[0], ...typeof routes]))
}))
