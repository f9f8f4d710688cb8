import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { NotFound } from "../../../schemas/Errors.ts"
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
} from "../../../schemas/Observe.ts"
import { Authentication, RequiredScope } from "./Security.ts"

const idParams = { id: Schema.String }

/**
 * Issues, events, releases and spike alerts (GUIDE §7): read with `observe:read`; changing an issue's
 * status needs `observe:read` too (the scope list has no `observe:write`). Ingestion is a
 * raw route (src/http/sentry/IngestRoute.ts).
 */
export class ObserveApi extends HttpApiGroup.make("observe").add(
  HttpApiEndpoint.get("issues", "/issues", { query: ListIssuesQuery, success: IssueList })
    .annotate(RequiredScope, "observe:read"),
  HttpApiEndpoint.get("issue", "/issues/:id", { params: idParams, success: Issue, error: NotFound })
    .annotate(RequiredScope, "observe:read"),
  HttpApiEndpoint.patch("updateIssue", "/issues/:id", {
    params: idParams,
    payload: UpdateIssue,
    success: Issue,
    error: NotFound
  }).annotate(RequiredScope, "observe:read"),
  HttpApiEndpoint.get("issueEvents", "/issues/:id/events", {
    params: idParams,
    query: ListEventsQuery,
    success: EventList,
    error: NotFound
  }).annotate(RequiredScope, "observe:read"),
  HttpApiEndpoint.get("event", "/events/:id", { params: idParams, success: StoredEvent, error: NotFound })
    .annotate(RequiredScope, "observe:read"),
  HttpApiEndpoint.get("releases", "/releases", { success: ReleaseList })
    .annotate(RequiredScope, "observe:read"),
  HttpApiEndpoint.get("release", "/releases/:version", {
    params: { version: Schema.String },
    success: Release,
    error: NotFound
  }).annotate(RequiredScope, "observe:read"),
  HttpApiEndpoint.get("alerts", "/alerts", { query: ListAlertsQuery, success: AlertList })
    .annotate(RequiredScope, "observe:read")
).prefix("/api/v1/observe").middleware(Authentication) {}
