import { Layer } from "effect"
import { BadgeRoute } from "./BadgeRoute.ts"
import { FeedRoute } from "./FeedRoute.ts"
import { LogoRoute } from "./LogoRoute.ts"
import { WidgetRoutes } from "./WidgetRoute.ts"

/**
 * The public status routes outside HttpApi (non-JSON bodies, CORS): feed, badge, widget, logo.
 * Their per-request services, `PublicRateLimit` among them, come from `serveHttp`.
 */
export const PublicStatusRoutes = Layer.mergeAll(FeedRoute, BadgeRoute, WidgetRoutes, LogoRoute)
