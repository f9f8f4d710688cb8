import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Zlib from "node:zlib"
import { adminToken, bootstrapOrg, request, startApp } from "../support/app.ts"
import { artifactPath, launchChromium } from "./browser.ts"

/**
 * The organization's logo on the public status page: set through the admin PATCH, fetched
 * once by Canopy through the outbound guard from a loopback image server, served from
 * Canopy's own origin (ETag, 304, CORS, a restrictive CSP), shown in the page's header in
 * Chromium without the browser ever asking the image server; a non-image, an oversized
 * image and a private address are refused with the reason in the answer.
 */

/** A real PNG of `width`×`height` solid pixels (8-bit RGB). */
const png = (width: number, height: number, rgb: readonly [number, number, number]) => {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4)
    length.writeUInt32BE(data.length)
    const body = Buffer.concat([Buffer.from(type, "ascii"), data])
    const crc = Buffer.alloc(4)
    crc.writeUInt32BE(Zlib.crc32(body))
    return Buffer.concat([length, body, crc])
  }
  const header = Buffer.alloc(13)
  header.writeUInt32BE(width, 0)
  header.writeUInt32BE(height, 4)
  header.set([8, 2, 0, 0, 0], 8)
  const rows = Buffer.concat(
    Array.from({ length: height }, () => Buffer.from([0, ...Array.from({ length: width }, () => rgb).flat()]))
  )
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", Zlib.deflateSync(rows)),
    chunk("IEND", Buffer.alloc(0))
  ])
}

interface ImageServer {
  readonly url: string
  /** Requests seen, by path. */
  readonly hits: Map<string, number>
  readonly files: Map<string, { readonly type: string; readonly body: Buffer }>
}

/** A loopback server of fixed files; closed with the scope. */
const imageServer = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<ImageServer & { server: Http.Server }>((resolve) => {
      const hits = new Map<string, number>()
      const files = new Map<string, { type: string; body: Buffer }>()
      const server = Http.createServer((req, res) => {
        const path = req.url ?? "/"
        hits.set(path, (hits.get(path) ?? 0) + 1)
        const file = files.get(path)
        if (file === undefined) {
          res.writeHead(404).end()
          return
        }
        res.writeHead(200, { "content-type": file.type }).end(file.body)
      })
      server.listen(0, "127.0.0.1", () =>
        resolve({ server, hits, files, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }))
    })
  ),
  ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
)

const setLogo = (baseUrl: string, slug: string, logoUrl: string | null) =>
  request(`${baseUrl}/api/v1/admin/orgs/${slug}`, { token: adminToken, method: "PATCH", body: { logoUrl } })

const getLogo = (baseUrl: string, slug: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`${baseUrl}/status/${slug}/logo`, { headers })
    return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) }
  })

describe("organization logo", () => {
  it.live("is fetched once, served from Canopy's origin and shown in the page's header", () =>
    Effect.gen(function*() {
      const images = yield* imageServer
      const red = png(48, 24, [220, 30, 30])
      const blue = png(30, 30, [30, 30, 220])
      images.files.set("/logo.png", { type: "image/png", body: red })
      images.files.set("/mark.svg", {
        type: "image/svg+xml",
        body: Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="20" height="20"><script>alert(1)</script>
<rect width="20" height="20" fill="green"/></svg>`)
      })
      const app = yield* startApp()
      yield* bootstrapOrg(app.baseUrl, { slug: "logo-org" })
      // Without a logo the route is a 404 and the page shows the initial.
      expect((yield* getLogo(app.baseUrl, "logo-org")).status).toBe(404)

      const updated = yield* setLogo(app.baseUrl, "logo-org", `${images.url}/logo.png`)
      expect(updated.status, JSON.stringify(updated.body)).toBe(200)
      expect(updated.body.logoUrl).toBe(`${images.url}/logo.png`)
      expect(updated.body.logoError).toBeNull()
      expect(images.hits.get("/logo.png")).toBe(1)

      const logo = yield* getLogo(app.baseUrl, "logo-org", { origin: "https://example.com" })
      expect(logo.status).toBe(200)
      expect(logo.headers.get("content-type")).toBe("image/png")
      expect(logo.body.equals(red)).toBe(true)
      expect(logo.headers.get("access-control-allow-origin")).toBe("*")
      expect(logo.headers.get("cache-control")).toBe("public, max-age=5, stale-while-revalidate=30")
      expect(logo.headers.get("x-content-type-options")).toBe("nosniff")
      const etag = logo.headers.get("etag")!
      expect((yield* getLogo(app.baseUrl, "logo-org", { "if-none-match": etag })).status).toBe(304)

      // In the browser: the header's image is loaded from Canopy, never from the image server.
      const browser = yield* launchChromium()
      const page = yield* Effect.promise(() => browser.newPage())
      const shown: any = yield* Effect.promise(async () => {
        await page.goto(`${app.baseUrl}/status/logo-org`)
        await page.waitForFunction(
          `(() => { const img = document.querySelector("header img.logo-image"); return img && img.complete })()`,
          undefined,
          { timeout: 30_000 }
        )
        await page.screenshot({ path: artifactPath("status-page-logo.png") })
        return page.evaluate(`(() => {
          const img = document.querySelector("header img.logo-image")
          return { origin: new URL(img.currentSrc).origin, naturalWidth: img.naturalWidth, naturalHeight: img.naturalHeight }
        })()`)
      })
      expect(shown.origin).toBe(new URL(app.baseUrl).origin)
      expect(shown.naturalWidth).toBe(48)
      expect(shown.naturalHeight).toBe(24)
      expect(images.hits.get("/logo.png")).toBe(1)

      // Setting the URL again fetches again: the new image is served and shown.
      images.files.set("/logo.png", { type: "image/png", body: blue })
      expect((yield* setLogo(app.baseUrl, "logo-org", `${images.url}/logo.png`)).body.logoError).toBeNull()
      expect(images.hits.get("/logo.png")).toBe(2)
      const changed = yield* getLogo(app.baseUrl, "logo-org")
      expect(changed.body.equals(blue)).toBe(true)
      expect(changed.headers.get("etag")).not.toBe(etag)
      const width = yield* Effect.promise(async () => {
        await page.reload()
        await page.waitForFunction(`document.querySelector("header img.logo-image")?.complete`, undefined, {
          timeout: 30_000
        })
        return page.evaluate(`document.querySelector("header img.logo-image").naturalWidth`)
      })
      expect(width).toBe(30)

      // An SVG is served with a CSP that runs none of its scripts.
      expect((yield* setLogo(app.baseUrl, "logo-org", `${images.url}/mark.svg`)).body.logoError).toBeNull()
      const svg = yield* getLogo(app.baseUrl, "logo-org")
      expect(svg.headers.get("content-type")).toBe("image/svg+xml")
      expect(svg.headers.get("content-security-policy")).toBe("default-src 'none'; style-src 'unsafe-inline'")

      // Removing it brings back the initial.
      const removed = yield* setLogo(app.baseUrl, "logo-org", null)
      expect(removed.body.logoUrl).toBeNull()
      expect((yield* getLogo(app.baseUrl, "logo-org")).status).toBe(404)
      const html = yield* request(`${app.baseUrl}/status/logo-org`)
      expect(html.body).not.toContain("logo-image")
    }), { timeout: 180_000 })

  it.live(
    "refuses what is not an image, too large or not https, saying why, and leaves the page without a logo",
    () =>
      Effect.gen(function*() {
        const images = yield* imageServer
        images.files.set("/logo.png", { type: "image/png", body: png(8, 8, [0, 0, 0]) })
        images.files.set("/page.html", { type: "text/html", body: Buffer.from("<html><body>hi</body></html>") })
        images.files.set("/fake.png", { type: "image/png", body: Buffer.from("<html><script>x</script></html>") })
        images.files.set("/huge.png", {
          type: "image/png",
          body: Buffer.concat([png(8, 8, [0, 0, 0]), Buffer.alloc(600 * 1024)])
        })
        const app = yield* startApp()
        yield* bootstrapOrg(app.baseUrl, { slug: "bad-logo" })
        expect((yield* setLogo(app.baseUrl, "bad-logo", `${images.url}/logo.png`)).body.logoError).toBeNull()

        const html = yield* setLogo(app.baseUrl, "bad-logo", `${images.url}/page.html`)
        expect(html.status).toBe(200)
        expect(html.body.logoUrl).toBe(`${images.url}/page.html`)
        expect(html.body.logoError).toMatch(/content type 'text\/html' is not an image/)
        // The failed fetch leaves the page without a logo (not the old one).
        expect((yield* getLogo(app.baseUrl, "bad-logo")).status).toBe(404)
        expect((yield* request(`${app.baseUrl}/status/bad-logo`)).body).not.toContain("logo-image")

        expect((yield* setLogo(app.baseUrl, "bad-logo", `${images.url}/fake.png`)).body.logoError).toMatch(
          /not a image\/png image/
        )
        expect((yield* setLogo(app.baseUrl, "bad-logo", `${images.url}/huge.png`)).body.logoError).toMatch(
          /larger than 512 KiB/
        )
        expect((yield* setLogo(app.baseUrl, "bad-logo", `${images.url}/missing.png`)).body.logoError).toMatch(
          /answered 404/
        )
        const invalid = yield* setLogo(app.baseUrl, "bad-logo", "not a url")
        expect(invalid.status).toBe(400)
        expect(invalid.body.error).toBe("validation_error")
        expect(invalid.body.details).toEqual([{ path: "body.logoUrl", message: "must be an absolute URL" }])
      }),
    { timeout: 120_000 }
  )

  it.live("is refused when its address is private, as the outbound guard decides", () =>
    Effect.gen(function*() {
      // Where private targets are not allowed (production), only https, and only public addresses.
      const app = yield* startApp({ outboundAllowPrivate: false })
      yield* bootstrapOrg(app.baseUrl, { slug: "private-logo" })
      const http = yield* setLogo(app.baseUrl, "private-logo", "http://example.com/logo.png")
      expect(http.status).toBe(400)
      expect(http.body.details).toEqual([{ path: "body.logoUrl", message: "must be https" }])
      // A loopback address: the guard refuses it before any connection is made.
      const loopback = yield* setLogo(app.baseUrl, "private-logo", "https://127.0.0.1:9/logo.png")
      expect(loopback.status).toBe(200)
      expect(loopback.body.logoError).toMatch(/the address is not allowed/)
      expect((yield* getLogo(app.baseUrl, "private-logo")).status).toBe(404)
    }), { timeout: 120_000 })
})
