import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { StatusSummary } from "../../../services/status/StatusSummary.ts"
import { CanopyApi } from "../Api.ts"

export const StatusHandlers = HttpApiBuilder.group(
  CanopyApi,
  "status",
  Effect.fn(function*(handlers) {
    const summary = yield* StatusSummary
    return handlers.handleAll({
      summary: ({ params }) => summary.get(params.slug)
    })
  })
)
