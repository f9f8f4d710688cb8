import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import {
  AddIncidentUpdate,
  CreateIncident,
  Incident,
  IncidentList,
  IncidentUpdate,
  ListIncidentsQuery,
  UpdateIncident
} from "../../../schemas/incidents/Incidents.ts"
import { NotFound, ValidationError } from "../../../schemas/platform/Errors.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication, RequiredScope } from "../tenancy/Security.ts"

const idParams = { id: Schema.String }

/** Incidents and their timelines (spec "Incidents"): read with `incidents:read`, change with `incidents:write`. */
export class IncidentsApi extends HttpApiGroup.make("incidents").add(
  HttpApiEndpoint.get("list", "/", {
    query: ListIncidentsQuery,
    success: IncidentList
  }).annotate(RequiredScope, "incidents:read").annotateMerge(
    docs("List incidents", "Newest first with their timelines, filtered by `status`. Scope `incidents:read`.")
  ),
  HttpApiEndpoint.post("create", "/", {
    payload: CreateIncident,
    success: Incident.annotate({ httpApiStatus: 201 }),
    error: ValidationError
  }).annotate(RequiredScope, "incidents:write").annotateMerge(
    docs(
      "Open an incident",
      "Status `investigating`, `identified` or `monitoring` (default `investigating`), with its first timeline entry. Scope `incidents:write`."
    )
  ),
  HttpApiEndpoint.get("get", "/:id", {
    params: idParams,
    success: Incident,
    error: NotFound
  }).annotate(RequiredScope, "incidents:read").annotateMerge(
    docs("Read an incident", "With its whole timeline, oldest first. Scope `incidents:read`.")
  ),
  HttpApiEndpoint.patch("update", "/:id", {
    params: idParams,
    payload: UpdateIncident,
    success: Incident,
    error: [NotFound, ValidationError]
  }).annotate(RequiredScope, "incidents:write").annotateMerge(
    docs(
      "Update an incident",
      "Edit its fields; a status change requires `message` and adds a timeline entry, as does `message` alone. Scope `incidents:write`."
    )
  ),
  HttpApiEndpoint.delete("remove", "/:id", {
    params: idParams,
    success: HttpApiSchema.NoContent,
    error: NotFound
  }).annotate(RequiredScope, "incidents:write").annotateMerge(
    docs("Delete an incident", "Removes the incident and its timeline for good. Scope `incidents:write`.")
  ),
  HttpApiEndpoint.post("addUpdate", "/:id/updates", {
    params: idParams,
    payload: AddIncidentUpdate,
    success: IncidentUpdate.annotate({ httpApiStatus: 201 }),
    error: NotFound
  }).annotate(RequiredScope, "incidents:write").annotateMerge(
    docs(
      "Post an incident update",
      "Adds a timeline entry; `status` defaults to the current one and, when given, moves the incident. Scope `incidents:write`."
    )
  )
).prefix("/api/v1/incidents").middleware(Authentication) {}
