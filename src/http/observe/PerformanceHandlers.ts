import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { parseIsoTimestamp } from "../../../schemas/monitors/Monitors.ts"
import { MAX_RANGE_DAYS } from "../../../schemas/observe/Performance.ts"
import { ValidationError } from "../../../schemas/platform/Errors.ts"
import { Performance } from "../../../services/observe/Performance.ts"
import { CanopyApi } from "../Api.ts"
import { CurrentPrincipal } from "../tenancy/Security.ts"

/** Default window: the last seven days. */
const DEFAULT_WINDOW_MS = 7 * 86_400_000

export const PerformanceHandlers = HttpApiBuilder.group(
  CanopyApi,
  "performance",
  Effect.fn(function*(handlers) {
    const performance = yield* Performance
    return handlers.handle("stats", ({ query }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const now = yield* Clock.currentTimeMillis
        const to = (query.to === undefined ? undefined : parseIsoTimestamp(query.to)) ?? new Date(now)
        const from = (query.from === undefined ? undefined : parseIsoTimestamp(query.from)) ??
          new Date(to.getTime() - DEFAULT_WINDOW_MS)
        // The schema checks the pair when both are given; here a default meets a given bound.
        const span = to.getTime() - from.getTime()
        if (span < 0 || span > MAX_RANGE_DAYS * 86_400_000) {
          const message = `must be before to and at most ${MAX_RANGE_DAYS} days earlier`
          return yield* new ValidationError({
            message: `Invalid query.from: ${message}`,
            details: [{ path: "query.from", message }]
          })
        }
        return yield* performance.stats(principal.org.id, {
          from,
          to,
          release: query.release,
          environment: query.environment,
          name: query.name
        })
      }))
  })
)
