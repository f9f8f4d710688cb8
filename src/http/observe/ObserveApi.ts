import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import {
  AlertList,
  EventList,
  Issue,
  IssueList,
  ListAlertsQuery,
  ListEventsQuery,
  ListIssuesQuery,
  Release,
  ReleaseList,
  StoredEvent,
  UpdateIssue
} from "../../../schemas/observe/Observe.ts"
import { NotFound } from "../../../schemas/platform/Errors.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication, RequiredScope } from "../tenancy/Security.ts"

const idParams = { id: Schema.String }

/**
 * Issues, events, releases and spike alerts (GUIDE §7): read with `observe:read`; changing an issue's
 * status needs `observe:read` too (the scope list has no `observe:write`). Ingestion is a
 * raw route (src/http/observe/IngestRoute.ts).
 */
export class ObserveApi extends HttpApiGroup.make("observe").add(
  HttpApiEndpoint.get("issues", "/issues", { query: ListIssuesQuery, success: IssueList })
    .annotate(RequiredScope, "observe:read").annotateMerge(
      docs(
        "List issues",
        "Error groups with their counters, filtered by `status`, `release`, `environment` and `level`, sorted by `lastSeen` (default), `firstSeen` or `count`, newest first, paged. Scope `observe:read`."
      )
    ),
  HttpApiEndpoint.get("issue", "/issues/:id", { params: idParams, success: Issue, error: NotFound })
    .annotate(RequiredScope, "observe:read").annotateMerge(
      docs(
        "Read an issue",
        "One error group with its counters: events (kept or sampled), distinct users, first and last seen and release. Scope `observe:read`."
      )
    ),
  HttpApiEndpoint.patch("updateIssue", "/issues/:id", {
    params: idParams,
    payload: UpdateIssue,
    success: Issue,
    error: NotFound
  }).annotate(RequiredScope, "observe:read").annotateMerge(
    docs(
      "Resolve, ignore or reopen an issue",
      "Sets `status` to `unresolved`, `resolved` or `ignored`; a resolved issue that sees a new event regresses to unresolved. Scope `observe:read`."
    )
  ),
  HttpApiEndpoint.get("issueEvents", "/issues/:id/events", {
    params: idParams,
    query: ListEventsQuery,
    success: EventList,
    error: NotFound
  }).annotate(RequiredScope, "observe:read").annotateMerge(
    docs(
      "List an issue's events",
      "The events kept for the issue (sampling keeps about the plan's events per minute), newest first, with their sample weight. Scope `observe:read`."
    )
  ),
  HttpApiEndpoint.get("event", "/events/:id", { params: idParams, success: StoredEvent, error: NotFound })
    .annotate(RequiredScope, "observe:read").annotateMerge(
      docs(
        "Read an event",
        "One stored event by its `evt_` id or by the client's `event_id`, with its frames. Scope `observe:read`."
      )
    ),
  HttpApiEndpoint.get("releases", "/releases", { success: ReleaseList })
    .annotate(RequiredScope, "observe:read").annotateMerge(
      docs(
        "List releases",
        "Per release: events, errors, errors per minute, spans and their error share, new issues, first and last seen. Scope `observe:read`."
      )
    ),
  HttpApiEndpoint.get("release", "/releases/:version", {
    params: { version: Schema.String },
    success: Release,
    error: NotFound
  }).annotate(RequiredScope, "observe:read").annotateMerge(
    docs("Read a release", "One release's counters (see List releases). Scope `observe:read`.")
  ),
  HttpApiEndpoint.get("alerts", "/alerts", { query: ListAlertsQuery, success: AlertList })
    .annotate(RequiredScope, "observe:read").annotateMerge(
      docs(
        "List spike alerts",
        "One entry per spike of the organization's or an issue's error rate above max(3 × its trailing baseline, a floor), newest first. Scope `observe:read`."
      )
    )
).prefix("/api/v1/observe").middleware(Authentication) {}
