import { Effect, Option } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { rendered, StatusCache } from "../../../services/status/StatusCache.ts"
import { OrganizationLogo } from "../../../services/tenancy/OrganizationLogo.ts"
import { errorResponse } from "../ErrorResponse.ts"
import { cachedResponse, SHORT_CACHE } from "./cachedResponse.ts"
import { takePublicLimit } from "./publicAccess.ts"

/**
 * A fetched SVG is someone else's markup served from Canopy's origin: opened on its own it
 * must not run scripts or load anything (inline styles are what logos use). `nosniff` comes
 * with every cached answer.
 */
export const LOGO_CSP = "default-src 'none'; style-src 'unsafe-inline'"

const NO_LOGO = JSON.stringify({ error: "not_found", message: "This organization has no logo" })

/**
 * `GET /status/{slug}/logo`: Canopy's copy of the organization's logo (`OrganizationLogo`),
 * from the runner's cache of rendered bytes like the other public routes (ETag, 304,
 * Cache-Control, CORS), limited per IP at the badge's image rate.
 */
export const LogoRoute = HttpRouter.add("GET", "/status/:slug/logo", (request) =>
  Effect.gen(function*() {
    const limit = yield* takePublicLimit("badge", request)
    if (!limit.allowed) return limit.rejection
    const { slug } = yield* HttpRouter.params
    const cache = yield* StatusCache
    const logos = yield* OrganizationLogo
    const entry = yield* Effect.option(Effect.flatMap(cache.organization(slug ?? ""), (org) =>
      cache.get(
        org.id,
        "logo",
        Effect.map(
          logos.read(org.id),
          Option.match({
            onNone: () => rendered(NO_LOGO, "application/json", 404),
            onSome: (logo) => rendered(logo.bytes, logo.contentType)
          })
        )
      )))
    if (Option.isNone(entry)) {
      return HttpServerResponse.setHeaders(errorResponse(404, "not_found", "No status page here"), limit.headers)
    }
    return cachedResponse(request, entry.value, SHORT_CACHE, { ...limit.headers, "content-security-policy": LOGO_CSP })
  }))
