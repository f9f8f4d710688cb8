import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Challenges } from "../../../services/subscriptions/Challenges.ts"
import { Subscriptions } from "../../../services/subscriptions/Subscriptions.ts"
import { CanopyApi } from "../Api.ts"

export const SubscriptionsHandlers = HttpApiBuilder.group(
  CanopyApi,
  "subscriptions",
  Effect.fn(function*(handlers) {
    const challenges = yield* Challenges
    const subscriptions = yield* Subscriptions
    return handlers.handleAll({
      challenge: () =>
        Effect.map(challenges.issue, (challenge) => ({
          parameters: { ...challenge.parameters },
          ...(challenge.signature === undefined ? {} : { signature: challenge.signature })
        })),
      subscribe: ({ payload }) => subscriptions.subscribe(payload)
    })
  })
)
