import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import {
  CreateMonitor,
  HeartbeatList,
  ListHeartbeatsQuery,
  ListMonitorsQuery,
  Monitor,
  MonitorList,
  UpdateMonitor
} from "../../../schemas/monitors/Monitors.ts"
import { NotFound, ValidationError } from "../../../schemas/platform/Errors.ts"
import { docs } from "../platform/OpenApiDocs.ts"
import { Authentication, RequiredScope } from "../tenancy/Security.ts"

const idParams = { id: Schema.String }

/** Uptime monitors (spec "Monitors"): read with `monitors:read`, change with `monitors:write`. */
export class MonitorsApi extends HttpApiGroup.make("monitors").add(
  HttpApiEndpoint.get("list", "/", {
    query: ListMonitorsQuery,
    success: MonitorList
  }).annotate(RequiredScope, "monitors:read").annotateMerge(
    docs(
      "List monitors",
      "The organization's monitors with 24-hour uptime, filtered by `active`, paged. Scope `monitors:read`."
    )
  ),
  HttpApiEndpoint.post("create", "/", {
    payload: CreateMonitor,
    success: Monitor.annotate({ httpApiStatus: 201 }),
    error: ValidationError
  }).annotate(RequiredScope, "monitors:write").annotateMerge(
    docs("Create a monitor", "A monitor checked from its creation on at its frequency. Scope `monitors:write`.")
  ),
  HttpApiEndpoint.get("get", "/:id", {
    params: idParams,
    success: Monitor,
    error: NotFound
  }).annotate(RequiredScope, "monitors:read").annotateMerge(
    docs("Read a monitor", "With uptime over 24 h, 7 d and 30 d and its 50 newest heartbeats. Scope `monitors:read`.")
  ),
  HttpApiEndpoint.patch("update", "/:id", {
    params: idParams,
    payload: UpdateMonitor,
    success: Monitor,
    error: [NotFound, ValidationError]
  }).annotate(RequiredScope, "monitors:write").annotateMerge(
    docs("Update a monitor", "Any subset of its settings; pausing and resuming is `active`. Scope `monitors:write`.")
  ),
  HttpApiEndpoint.delete("remove", "/:id", {
    params: idParams,
    success: HttpApiSchema.NoContent,
    error: NotFound
  }).annotate(RequiredScope, "monitors:write").annotateMerge(
    docs("Delete a monitor", "Stops its checks; its history is kept. Scope `monitors:write`.")
  ),
  HttpApiEndpoint.get("heartbeats", "/:id/heartbeats", {
    params: idParams,
    query: ListHeartbeatsQuery,
    success: HeartbeatList,
    error: NotFound
  }).annotate(RequiredScope, "monitors:read").annotateMerge(
    docs("List heartbeats", "The monitor's checks, newest first, within `from`/`to`. Scope `monitors:read`.")
  )
).prefix("/api/v1/monitors").middleware(Authentication) {}
