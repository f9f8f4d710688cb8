import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import { Forbidden, RateLimited, Unauthorized } from "../../../schemas/platform/Errors.ts"
import type { ApiScope } from "../../../schemas/tenancy/Tenancy.ts"
import type { PublicEndpoint } from "../../../services/ratelimits/PublicRateLimit.ts"
import type { Principal } from "../../../services/tenancy/ApiKeys.ts"

/** The authenticated caller, provided to every endpoint behind `Authentication`. */
export class CurrentPrincipal extends Context.Service<CurrentPrincipal, Principal>()("canopy/http/CurrentPrincipal") {}

/** Endpoint annotation: the scope a key needs for it (checked by `Authentication`). */
export class RequiredScope extends Context.Service<RequiredScope, ApiScope>()("canopy/http/RequiredScope") {}

/** Bearer API key, scope check and the organization's request quota. */
export class Authentication extends HttpApiMiddleware.Service<Authentication, {
  provides: CurrentPrincipal
}>()("canopy/http/Authentication", {
  security: { bearer: HttpApiSecurity.bearer },
  error: [Unauthorized, Forbidden, RateLimited]
}) {}

/** Bearer `ADMIN_TOKEN` for the admin API (outside the request quota). */
export class AdminAuthentication extends HttpApiMiddleware.Service<AdminAuthentication>()(
  "canopy/http/AdminAuthentication",
  {
    security: { bearer: HttpApiSecurity.bearer },
    error: Unauthorized
  }
) {}

/** Endpoint annotation: which per-IP public limit applies (see PublicRateLimit). */
export class PublicLimit extends Context.Service<PublicLimit, PublicEndpoint>()("canopy/http/PublicLimit") {}

/** Public endpoints: no credential, limited per client IP, never touching an organization's quota. */
export class PublicRateLimited extends HttpApiMiddleware.Service<PublicRateLimited>()("canopy/http/PublicRateLimited", {
  error: RateLimited
}) {}
