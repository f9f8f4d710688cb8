import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { launchChromium } from "../status/browser.ts"
import { request, startApp } from "../support/app.ts"

/**
 * `/docs` in a real browser: a small page whose reference script is a separate, cached file
 * served by Canopy, and no request leaves for a third party (fonts, CDN) — it works offline.
 */
describe("/docs", () => {
  it.live(
    "renders the API reference from local, cached assets with no third-party request",
    () =>
      Effect.gen(function*() {
        const app = yield* startApp()
        const page = yield* request(`${app.baseUrl}/docs`)
        expect(page.status).toBe(200)
        expect((page.body as string).length).toBeLessThan(16 * 1024)
        const script = /<script src="([^"]+)"/.exec(page.body as string)?.[1]
        expect(script).toMatch(/^\/docs\/assets\/scalar\.[A-Za-z0-9_-]+\.js$/)
        const asset = yield* Effect.promise(() =>
          fetch(`${app.baseUrl}${script}`, { headers: { "accept-encoding": "gzip" } })
        )
        expect(asset.status).toBe(200)
        expect(asset.headers.get("cache-control")).toContain("immutable")
        expect(asset.headers.get("content-encoding")).toBe("gzip")
        expect(asset.headers.get("content-type")).toContain("javascript")
        yield* Effect.promise(() => asset.arrayBuffer())

        const browser = yield* launchChromium()
        const tab = yield* Effect.promise(() => browser.newPage())
        // Every request the page makes is recorded; one leaving for a third party is answered at
        // once (aborted) so it cannot hang the test on a machine whose outbound traffic is dropped.
        const requested: Array<string> = []
        yield* Effect.promise(() =>
          tab.route("**/*", (route) => {
            const url = route.request().url()
            requested.push(url)
            return url.startsWith(app.baseUrl) || url.startsWith("data:") ? route.continue() : route.abort()
          })
        )
        yield* Effect.promise(() => tab.goto(`${app.baseUrl}/docs`, { waitUntil: "load", timeout: 60_000 }))
        // The reference rendered the document it fetched: an operation's summary is on the page.
        yield* Effect.promise(() => tab.getByText("Readiness").first().waitFor({ timeout: 60_000 }))
        // Fonts are what a page loads from a CDN after it renders: wait until every font the
        // rendered page asked for has loaded (or failed), so a late font request is seen.
        yield* Effect.promise(() => tab.evaluate("document.fonts.ready.then(() => document.fonts.status)"))
        const thirdParty = requested.filter((url) => !url.startsWith(app.baseUrl) && !url.startsWith("data:"))
        expect(thirdParty).toEqual([])
        expect(requested).toContain(`${app.baseUrl}/openapi.json`)
      }).pipe(Effect.scoped),
    180_000
  )
})
