import { Context, Effect, type Tracer } from "effect"

/**
 * Per-request scratchpad shared between the edge middleware (outermost) and the
 * HttpApi middlewares (innermost): the rate-limit headers decided by the limiter must
 * also land on responses that an error produced after it, and the organization found by
 * authentication belongs on the request's span and log line.
 */
export interface RequestStateShape {
  readonly requestId: string
  rateLimitHeaders: Record<string, string> | undefined
  /** The organization of the key that authenticated the request, once known. */
  orgId?: string | undefined
  /** The request's server span when the request is traced. */
  readonly span?: Tracer.Span | undefined
}

export class RequestState extends Context.Service<RequestState, RequestStateShape>()("canopy/http/RequestState") {}

/** Authentication found the request's organization: it goes on the request's span and log line. */
export const noteOrganization = (orgId: string): Effect.Effect<void> =>
  Effect.withFiber((fiber) => {
    const state = Context.getOrUndefined(fiber.context, RequestState)
    if (state !== undefined) {
      state.orgId = orgId
      state.span?.attribute("canopy.org_id", orgId)
    }
    return Effect.void
  })
