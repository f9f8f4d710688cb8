import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AltchaChallenge, SubscribeFailed, SubscribeRequest, SubscribeResult } from "../../../schemas/Subscriptions.ts"
import { PublicLimit, PublicRateLimited } from "./Security.ts"

/**
 * Public e-mail subscription (GUIDE §6): an ALTCHA challenge, then the subscribe call
 * (10 per minute per client IP). The confirm and unsubscribe links are pages (src/http/pages).
 */
export class SubscriptionsApi extends HttpApiGroup.make("subscriptions").add(
  HttpApiEndpoint.get("challenge", "/api/v1/subscribe/challenge", { success: AltchaChallenge }),
  HttpApiEndpoint.post("subscribe", "/api/v1/subscribe", {
    payload: SubscribeRequest,
    success: SubscribeResult,
    error: SubscribeFailed
  }).annotate(PublicLimit, "subscribe")
).middleware(PublicRateLimited) {}
