import { Effect, Layer, Option } from "effect"
import { HttpRouter, type HttpServerRequest } from "effect/http"
import { Subscriptions } from "../../../services/subscriptions/Subscriptions.ts"
import { htmlResponse, messagePage } from "../html.ts"

/**
 * The links in subscription e-mails (GUIDE §6) open pages, not JSON: a person clicks them.
 * `GET …/confirm?token=` confirms; `GET …/unsubscribe?token=` unsubscribes, and so does
 * `POST` (RFC 8058 one-click unsubscribe from the mail client).
 */
const tokenOf = (request: HttpServerRequest.HttpServerRequest) =>
  (new URL(request.url, "http://localhost").searchParams.get("token") ?? "").slice(0, 512)

const invalidLink = htmlResponse(
  messagePage({
    title: "This link is not valid",
    message: "The link is unknown, was already used, or is incomplete. Subscribe again from the status page."
  }),
  404
)

const confirm = HttpRouter.add("GET", "/api/v1/subscribe/confirm", (request) =>
  Effect.gen(function*() {
    const subscriptions = yield* Subscriptions
    const confirmed = yield* subscriptions.confirm(tokenOf(request))
    if (Option.isNone(confirmed)) return invalidLink
    return htmlResponse(messagePage({
      title: "Subscription confirmed",
      message: `You will receive an e-mail when ${confirmed.value.orgName} posts an incident or an update.`,
      link: { href: `/status/${confirmed.value.orgSlug}`, label: "Back to the status page" }
    }))
  }))

const unsubscribe = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const subscriptions = yield* Subscriptions
    const done = yield* subscriptions.unsubscribe(tokenOf(request))
    if (Option.isNone(done)) return invalidLink
    return htmlResponse(messagePage({
      title: "You are unsubscribed",
      message: "You will not receive any more status e-mails at this address.",
      link: done.value.orgSlug === ""
        ? undefined
        : { href: `/status/${done.value.orgSlug}`, label: "Back to the status page" }
    }))
  })

export const SubscriptionPages = Layer.mergeAll(
  confirm,
  HttpRouter.add("GET", "/api/v1/subscribe/unsubscribe", unsubscribe),
  HttpRouter.add("POST", "/api/v1/subscribe/unsubscribe", unsubscribe)
)
