import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import {
  AltchaChallenge,
  SubscribeFailed,
  SubscribeRequest,
  SubscribeResult
} from "../../../schemas/subscriptions/Subscriptions.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { PublicLimit, PublicRateLimited } from "../tenancy/Security.ts"

/**
 * Public e-mail subscription (GUIDE §6): an ALTCHA challenge, then the subscribe call
 * (10 per minute per client IP). The confirm and unsubscribe links are pages (src/http/subscriptions/SubscriptionPages.ts).
 */
export class SubscriptionsApi extends HttpApiGroup.make("subscriptions").add(
  HttpApiEndpoint.get("challenge", "/api/v1/subscribe/challenge", { success: AltchaChallenge }).annotateMerge(
    docs(
      "Subscription challenge",
      "An ALTCHA proof-of-work challenge; its solved payload (base64) is the `challengeToken` of one subscribe call."
    )
  ),
  HttpApiEndpoint.post("subscribe", "/api/v1/subscribe", {
    payload: SubscribeRequest,
    success: SubscribeResult,
    error: SubscribeFailed
  }).annotate(PublicLimit, "subscribe").annotateMerge(
    docs(
      "Subscribe to a status page",
      "Mails a confirmation link (double opt-in); the answer is the same whether or not the address was subscribed. " +
        "No key; 10 per minute per client IP."
    )
  )
).middleware(PublicRateLimited) {}
