import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Alerts } from "../../../services/observe/Alerts.ts"
import { Issues } from "../../../services/observe/Issues.ts"
import { CanopyApi } from "../Api.ts"
import { CurrentPrincipal } from "../tenancy/Security.ts"

const orgId = CurrentPrincipal.pipe(Effect.map((principal) => principal.org.id))

export const ObserveHandlers = HttpApiBuilder.group(
  CanopyApi,
  "observe",
  Effect.fn(function*(handlers) {
    const issues = yield* Issues
    const alerts = yield* Alerts
    return handlers.handleAll({
      issues: ({ query }) => Effect.flatMap(orgId, (org) => issues.list(org, query)),
      issue: ({ params }) => Effect.flatMap(orgId, (org) => issues.get(org, params.id)),
      updateIssue: ({ params, payload }) =>
        Effect.flatMap(orgId, (org) => issues.setStatus(org, params.id, payload.status)),
      issueEvents: ({ params, query }) => Effect.flatMap(orgId, (org) => issues.events(org, params.id, query)),
      event: ({ params }) => Effect.flatMap(orgId, (org) => issues.event(org, params.id)),
      releases: () => Effect.flatMap(orgId, (org) => issues.releases(org)),
      release: ({ params }) => Effect.flatMap(orgId, (org) => issues.release(org, params.version)),
      alerts: ({ query }) => Effect.flatMap(orgId, (org) => alerts.list(org, query))
    })
  })
)
