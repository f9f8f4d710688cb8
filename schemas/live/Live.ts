import { Schema } from "effect"
import { StatusSummary } from "../status/Status.ts"

/**
 * Messages of the live status stream (GUIDE §6), server to client, one JSON text frame
 * each. A connection starts with one `snapshot`; then come events as they commit, each
 * `{type, data, at}` with `at` the event's commit time (ISO 8601):
 *
 * - `status`: the new status summary, after any monitor status or incident change;
 * - `monitor.status`: `{monitorId, name, status, previousStatus, timestamp}`;
 * - `incident.created` | `incident.updated` | `incident.resolved`: `{incident, update}`
 *   (`IncidentEventData`); `incident.deleted`: the incident as it was, `update` null;
 * - authenticated channel only: `heartbeat` (one check) and `observe.spike`.
 *
 * The client sends nothing; the server pings every 30 s and drops a client that does not
 * answer, or that reads so slowly that its send buffer passes its bound.
 */
export const PublicLiveEventType = Schema.Literals([
  "status",
  "monitor.status",
  "incident.created",
  "incident.updated",
  "incident.resolved",
  "incident.deleted"
])
export type PublicLiveEventType = typeof PublicLiveEventType.Type

export const PrivateLiveEventType = Schema.Literals(["heartbeat", "observe.spike", "ci.run"])
export type PrivateLiveEventType = typeof PrivateLiveEventType.Type

export const LiveSnapshot = Schema.Struct({ type: Schema.tag("snapshot"), data: StatusSummary })

export const LiveStatus = Schema.Struct({ type: Schema.tag("status"), data: StatusSummary, at: Schema.String })

export const LiveEvent = Schema.Struct({
  type: Schema.Union([PublicLiveEventType, PrivateLiveEventType]),
  data: Schema.Unknown,
  at: Schema.String
})

export const LiveMessage = Schema.Union([LiveSnapshot, LiveStatus, LiveEvent])
export type LiveMessage = typeof LiveMessage.Type
