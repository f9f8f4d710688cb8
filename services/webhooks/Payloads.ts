import { Option } from "effect"
import { aiReviewEventTypes } from "../../schemas/ai/AiReviewEvents.ts"
import { ciWebhookEventTypes } from "../../schemas/ci/Ci.ts"
import { CreateEvent, DeleteEvent, PushEvent } from "../../schemas/git/Repositories.ts"
import { incidentEvent, type IncidentEventType } from "../../schemas/incidents/Incidents.ts"
import { issueEventTypes } from "../../schemas/issues/RepositoryIssues.ts"
import { MonitorStatusEvent } from "../../schemas/monitors/Monitors.ts"
import { IssueCreatedEvent, IssueRegressedEvent, SpikeEvent } from "../../schemas/observe/Observe.ts"
import { pullRequestEventTypes } from "../../schemas/pulls/PullRequestEvents.ts"
import { organizationEvents } from "../../schemas/webhooks/Webhooks.ts"
import type { DomainEvent } from "../events/Events.ts"

/** The organization named in organization-webhook payloads. */
export interface PayloadOrganization {
  readonly id: string
  readonly slug: string
}

/** The repository named in repository-webhook payloads (spec 001 push payload). */
export interface PayloadRepository {
  readonly id: string
  readonly name: string
  readonly fullName: string
}

/**
 * One domain event as webhooks see it: the webhook event type, the repository it concerns
 * (null: an organization event) and its payload, built once the organization is known.
 */
export interface WebhookEvent {
  readonly event: string
  readonly repoId: string | null
  readonly payload: (organization: PayloadOrganization) => Record<string, unknown>
}

/** Repository issue and pull request events: their data is already the webhook payload. */
const repositoryObjectEvents: ReadonlyArray<{ match(event: DomainEvent): Option.Option<unknown> }> = [
  ...issueEventTypes,
  ...pullRequestEventTypes,
  ...ciWebhookEventTypes,
  ...aiReviewEventTypes
]

/** The domain event types the fan-out consumer reads. */
export const sourceEventTypes: ReadonlyArray<string> = [
  MonitorStatusEvent.type,
  PushEvent.type,
  CreateEvent.type,
  DeleteEvent.type,
  ...issueEventTypes.map((kind) => kind.type),
  ...pullRequestEventTypes.map((type) => type.type),
  ...ciWebhookEventTypes.map((type) => type.type),
  ...aiReviewEventTypes.map((type) => type.type),
  ...organizationEvents.filter((event) => !event.startsWith("monitor."))
]

const monitorEvent = (status: string, previousStatus: string): string | undefined => {
  if (status === "down") return "monitor.down"
  if (status === "degraded") return "monitor.degraded"
  // A first "up" after creation or a resume is no recovery.
  if (status === "up" && (previousStatus === "down" || previousStatus === "degraded")) return "monitor.up"
  return undefined
}

/** The object (and what goes beside it) of the organization events other than monitors. */
const organizationObject = (event: DomainEvent): Option.Option<Record<string, unknown>> => {
  if (event.type.startsWith("incident.") && (organizationEvents as ReadonlyArray<string>).includes(event.type)) {
    return Option.map(
      incidentEvent(event.type as IncidentEventType).match(event),
      ({ incident, update }) => ({ incident, update })
    )
  }
  const issue = Option.orElse(IssueCreatedEvent.match(event), () => IssueRegressedEvent.match(event))
  if (Option.isSome(issue)) return Option.some({ issue: { id: issue.value.issueId } })
  return Option.map(SpikeEvent.match(event), ({ alertId, ...spike }) => ({
    spike: { id: alertId, type: "spike", ...spike }
  }))
}

const action = (event: string) => event.slice(event.lastIndexOf(".") + 1)

/**
 * Maps a domain event to the webhook event it triggers, if any:
 * - `monitor.status` → `monitor.down` / `monitor.degraded` / `monitor.up` (a recovery from
 *   down or degraded) with `{event, action, organization, monitor, timestamp}`;
 * - `incident.*` (same names) with `incident` (as the API returns it) and `update` (the
 *   timeline entry the change added, or null) beside it; `observe.issue.created|regressed`
 *   with `issue: {id}`; `observe.spike` with `spike` (the alert: `{id, type, scope, issueId,
 *   count, baseline, threshold}`) — GUIDE §13, each object under its own name;
 * - `pull_request.*` with `{event, action, repository, pullRequest, sender, timestamp}` (plus
 *   `review`, `requestedReviewers`, `merge`, `changes` where the event has them);
 * - `push` with the spec's payload (`event`, `repository`, `sender`, `ref`, `before`, `after`,
 *   `commits`, `timestamp`), `create` and `delete` with `ref`, `refType` and `sha` instead of
 *   the push fields, to the repository's webhooks;
 * - `issue.opened|closed|updated|commented` (repository issues) with `{event, action, repository,
 *   issue, sender, timestamp}`, plus `changes` (updated) or `comment` (commented).
 */
export const toWebhookEvent = (event: DomainEvent): Option.Option<WebhookEvent> => {
  const refEvent = Option.orElse(
    PushEvent.match(event),
    () => Option.orElse(CreateEvent.match(event), () => DeleteEvent.match(event))
  )
  if (Option.isSome(refEvent)) {
    const data = refEvent.value
    return Option.some({
      event: event.type,
      repoId: data.repository.id,
      payload: () => ({ event: event.type, ...data })
    })
  }
  for (const kind of repositoryObjectEvents) {
    const matched = kind.match(event)
    if (Option.isSome(matched)) {
      // `{event, action, repository, <object>, sender, timestamp}` plus the event's own fields.
      const data = matched.value as { readonly repository: PayloadRepository } & Record<string, unknown>
      return Option.some({
        event: event.type,
        repoId: data.repository.id,
        payload: () => ({ event: event.type, action: action(event.type), ...data })
      })
    }
  }
  const status = MonitorStatusEvent.match(event)
  if (Option.isSome(status)) {
    const data = status.value
    const name = monitorEvent(data.status, data.previousStatus)
    if (name === undefined) return Option.none()
    return Option.some({
      event: name,
      repoId: null,
      payload: (organization) => ({
        event: name,
        action: action(name),
        organization,
        monitor: { id: data.monitorId, name: data.name, status: data.status, previousStatus: data.previousStatus },
        timestamp: data.timestamp
      })
    })
  }
  const objects = organizationObject(event)
  if (Option.isSome(objects)) {
    return Option.some({
      event: event.type,
      repoId: null,
      payload: (organization) => ({
        event: event.type,
        action: action(event.type),
        organization,
        ...objects.value,
        timestamp: event.createdAt.toISOString()
      })
    })
  }
  return Option.none()
}

const zens = [
  "Design for failure.",
  "Keep it logically awesome.",
  "Anything added dilutes everything else.",
  "Approachable is better than simple.",
  "Half measures are as bad as nothing at all."
]

/** The `ping` payload of `POST …/test` (GUIDE §13). */
export const pingPayload = (
  hookId: string,
  organization: PayloadOrganization,
  repository: PayloadRepository | null,
  timestamp: string
): Record<string, unknown> => ({
  event: "ping",
  hookId,
  zen: zens[Math.floor(Math.random() * zens.length)],
  organization,
  ...(repository === null ? {} : { repository }),
  timestamp
})
