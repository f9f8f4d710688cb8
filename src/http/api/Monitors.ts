import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { NotFound, ValidationError } from "../../../schemas/Errors.ts"
import {
  CreateMonitor,
  HeartbeatList,
  ListHeartbeatsQuery,
  ListMonitorsQuery,
  Monitor,
  MonitorList,
  UpdateMonitor
} from "../../../schemas/Monitoring.ts"
import { Authentication, RequiredScope } from "./Security.ts"

const idParams = { id: Schema.String }

/** Uptime monitors (spec "Monitors"): read with `monitors:read`, change with `monitors:write`. */
export class MonitorsApi extends HttpApiGroup.make("monitors").add(
  HttpApiEndpoint.get("list", "/", {
    query: ListMonitorsQuery,
    success: MonitorList
  }).annotate(RequiredScope, "monitors:read"),
  HttpApiEndpoint.post("create", "/", {
    payload: CreateMonitor,
    success: Monitor.annotate({ httpApiStatus: 201 }),
    error: ValidationError
  }).annotate(RequiredScope, "monitors:write"),
  HttpApiEndpoint.get("get", "/:id", {
    params: idParams,
    success: Monitor,
    error: NotFound
  }).annotate(RequiredScope, "monitors:read"),
  HttpApiEndpoint.patch("update", "/:id", {
    params: idParams,
    payload: UpdateMonitor,
    success: Monitor,
    error: [NotFound, ValidationError]
  }).annotate(RequiredScope, "monitors:write"),
  HttpApiEndpoint.delete("remove", "/:id", {
    params: idParams,
    success: HttpApiSchema.NoContent,
    error: NotFound
  }).annotate(RequiredScope, "monitors:write"),
  HttpApiEndpoint.get("heartbeats", "/:id/heartbeats", {
    params: idParams,
    query: ListHeartbeatsQuery,
    success: HeartbeatList,
    error: NotFound
  }).annotate(RequiredScope, "monitors:read")
).prefix("/api/v1/monitors").middleware(Authentication) {}
