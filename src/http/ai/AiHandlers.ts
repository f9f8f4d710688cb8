import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AiReviews } from "../../../services/ai/AiReviews.ts"
import { AiSettings } from "../../../services/ai/AiSettings.ts"
import { AiSuggestions } from "../../../services/ai/AiSuggestions.ts"
import { actorOf } from "../../../services/tenancy/Actor.ts"
import { CanopyApi } from "../Api.ts"
import { ownOrg } from "../git/RepositoriesHandlers.ts"
import { CurrentPrincipal } from "../tenancy/Security.ts"

export const AiHandlers = HttpApiBuilder.group(
  CanopyApi,
  "ai",
  Effect.fn(function*(handlers) {
    const settings = yield* AiSettings
    const reviews = yield* AiReviews
    const suggestions = yield* AiSuggestions
    return handlers.handleAll({
      settings: ({ params }) => Effect.flatMap(ownOrg(params), (org) => settings.get(org, params.repo)),
      updateSettings: ({ params, payload }) =>
        Effect.flatMap(ownOrg(params), (org) => settings.update(org, params.repo, payload)),
      trigger: ({ params }) =>
        Effect.flatMap(ownOrg(params), (org) => reviews.trigger(org, params.repo, params.number)),
      review: ({ params }) => Effect.flatMap(ownOrg(params), (org) => reviews.latest(org, params.repo, params.number)),
      applySuggestion: ({ params }) =>
        Effect.gen(function*() {
          const org = yield* ownOrg(params)
          const actor = actorOf(yield* CurrentPrincipal)
          return yield* suggestions.apply(org, params.repo, params.id, actor)
        }),
      dismissSuggestion: ({ params, payload }) =>
        Effect.flatMap(
          ownOrg(params),
          (org) => suggestions.dismiss(org, params.repo, params.id, payload.reason ?? null)
        )
    })
  })
)
