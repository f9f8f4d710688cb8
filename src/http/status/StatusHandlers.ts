import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { rendered, StatusCache } from "../../../services/status/StatusCache.ts"
import { StatusSummary } from "../../../services/status/StatusSummary.ts"
import { CanopyApi } from "../Api.ts"
import { cachedResponse, SHORT_CACHE } from "./cachedResponse.ts"

/** The summary from the runner's cache of rendered bytes (the JSON the Schema encodes: plain data). */
export const StatusHandlers = HttpApiBuilder.group(
  CanopyApi,
  "status",
  Effect.fn(function*(handlers) {
    const summaries = yield* StatusSummary
    const cache = yield* StatusCache
    return handlers.handle("summary", ({ params, request }) =>
      Effect.gen(function*() {
        const org = yield* cache.organization(params.slug)
        const entry = yield* cache.get(
          org.id,
          "summary",
          Effect.map(summaries.forOrganization(org.id), (summary) =>
            rendered(JSON.stringify(summary), "application/json"))
        )
        return cachedResponse(request, entry, SHORT_CACHE)
      }))
  })
)
