import { Layer } from "effect"
import { HttpRouter } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { CanopyApi } from "./api/Api.ts"
import { EdgeMiddleware } from "./Edge.ts"
import { AdminHandlers } from "./handlers/Admin.ts"
import { MeHandlers } from "./handlers/Me.ts"
import { MonitorsHandlers } from "./handlers/Monitors.ts"
import { OrgHandlers } from "./handlers/Org.ts"
import { AdminAuthenticationLive, AuthenticationLive, PublicRateLimitedLive } from "./handlers/Security.ts"
import { StatusHandlers } from "./handlers/Status.ts"
import { SystemHandlers } from "./handlers/System.ts"
import { WebhooksHandlers } from "./handlers/Webhooks.ts"
import { PublicRateLimit } from "./PublicRateLimit.ts"
import { RequestQuota } from "./RequestQuota.ts"
import { TrustedProxiesMiddleware } from "./TrustedProxies.ts"

const ApiRoutes = HttpApiBuilder.layer(CanopyApi, { openapiPath: "/openapi.json" }).pipe(
  Layer.provide([
    SystemHandlers,
    MeHandlers,
    OrgHandlers,
    MonitorsHandlers,
    AdminHandlers,
    StatusHandlers,
    WebhooksHandlers
  ]),
  Layer.provide([AuthenticationLive, AdminAuthenticationLive, PublicRateLimitedLive]),
  Layer.provide([RequestQuota.layer, PublicRateLimit.layer])
)

/** Every HTTP route: the HttpApi endpoints, their docs, and the edge middleware around all of it. */
export const HttpAppLive = Layer.mergeAll(
  ApiRoutes,
  HttpApiScalar.layer(CanopyApi, { path: "/docs" }),
  EdgeMiddleware,
  TrustedProxiesMiddleware
)

export const serveHttp = HttpRouter.serve(HttpAppLive, { disableLogger: true })
