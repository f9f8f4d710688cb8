import { Context } from "effect"

/**
 * Per-request scratchpad shared between the edge middleware (outermost) and the
 * HttpApi middlewares (innermost): the rate-limit headers decided by the limiter must
 * also land on responses that an error produced after it.
 */
export interface RequestStateShape {
  readonly requestId: string
  rateLimitHeaders: Record<string, string> | undefined
}

export class RequestState extends Context.Service<RequestState, RequestStateShape>()("canopy/http/RequestState") {}
