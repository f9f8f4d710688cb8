import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { createHash } from "node:crypto"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { gzipSync } from "node:zlib"

/**
 * `/docs`: the Scalar API reference as a small page that loads `/openapi.json`, and Scalar's
 * browser bundle as a separate file named by its hash (cached for a year, gzip when the
 * client takes it). Scalar's default fonts are off: they come from its CDN, and the page
 * makes no third-party request (it works offline). The bundle is the one effect ships for
 * `HttpApiScalar`; its module is internal to effect, so it is read by file path, and
 * `test/platform/Docs.test.ts` fails loudly if an upgrade moves it.
 */
const bundleModule = Path.join(
  Path.dirname(fileURLToPath(import.meta.resolve("effect"))),
  "http-api",
  "internal",
  "httpApiScalar.js"
)

interface Bundle {
  readonly name: string
  readonly body: Uint8Array
  readonly gzipped: Uint8Array
  readonly etag: string
}

/** Loaded and compressed on the first request, not at start-up (3 MB most runs never serve). */
const loadBundle = Effect.promise(async (): Promise<Bundle> => {
  const { javascript } = await import(pathToFileURL(bundleModule).href) as { javascript: string }
  const body = new TextEncoder().encode(javascript)
  const hash = createHash("sha256").update(body).digest("base64url").slice(0, 16)
  return { name: `scalar.${hash}.js`, body, gzipped: gzipSync(body, { level: 9 }), etag: `"${hash}"` }
})

/**
 * Scalar's own fonts (Inter, JetBrains Mono) load from its CDN: the system's are used instead.
 * Scalar's theme sits in a cascade layer, so this unlayered style wins, also during the first
 * render, before the configuration (`withDefaultFonts: false`) applies.
 */
const systemFonts = `:root, .light-mode, .dark-mode {
  --scalar-font: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  --scalar-font-code: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
}`

const page = (scriptPath: string) =>
  `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Canopy API</title>
    <meta name="description" content="Uptime & status, error tracking, code hosting and per-plan rate limits" />
    <style>${systemFonts}</style>
  </head>
  <body>
    <div id="api-reference"></div>
    <script src="${scriptPath}"></script>
    <script>
      Scalar.createApiReference(document.getElementById("api-reference"), {
        _integration: "html",
        url: "/openapi.json",
        withDefaultFonts: false
      })
    </script>
  </body>
</html>`

export const DocsRoutes = Layer.unwrap(Effect.gen(function*() {
  const bundle = yield* Effect.cached(loadBundle)
  const docs = HttpRouter.add(
    "GET",
    "/docs",
    () =>
      Effect.map(bundle, ({ name }) =>
        HttpServerResponse.html(page(`/docs/assets/${name}`)).pipe(
          HttpServerResponse.setHeader("cache-control", "no-cache")
        ))
  )
  const asset = HttpRouter.add("GET", "/docs/assets/:file", (request) =>
    Effect.gen(function*() {
      const { body, etag, gzipped, name } = yield* bundle
      const { file } = yield* HttpRouter.params
      if (file !== name) {
        return HttpServerResponse.text("Not found", { status: 404 })
      }
      const headers = {
        etag,
        "cache-control": "public, max-age=31536000, immutable",
        vary: "accept-encoding"
      }
      if (request.headers["if-none-match"] === etag) return HttpServerResponse.empty({ status: 304, headers })
      const gzip = /\bgzip\b/.test(request.headers["accept-encoding"] ?? "")
      return HttpServerResponse.uint8Array(gzip ? gzipped : body, {
        contentType: "text/javascript; charset=utf-8",
        headers: gzip ? { ...headers, "content-encoding": "gzip" } : headers
      })
    }))
  return Layer.mergeAll(docs, asset)
}))
