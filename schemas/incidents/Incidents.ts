import { Option, Schema } from "effect"
import { type EventEnvelope, type EventType, eventType } from "../events/Events.ts"
import { IsoTimestamp } from "../monitors/Monitors.ts"

/**
 * Incidents and their timelines (spec "Incident", "Incident update", incident state table;
 * GUIDE §6).
 *
 * Wire choices where the spec is silent:
 * - `description` and `resolvedAt` are always present, `null` when unset / not resolved.
 * - `affectedMonitors` (monitor ids of the same organization) is always returned, in the
 *   order given; PATCH may replace it.
 * - `message` is accepted on create: the first timeline entry's text (else the
 *   description, else the title).
 * - Scheduled maintenance: a `maintenance` incident may carry a window, `scheduledFor`
 *   (required for a window) and `scheduledUntil` (after it); both `null` otherwise. The
 *   status page shows it as upcoming, then in progress; it never lowers the status.
 */

export const IncidentStatus = Schema.Literals(["investigating", "identified", "monitoring", "resolved"])
export type IncidentStatus = typeof IncidentStatus.Type

/** Only the first three statuses are accepted at creation (spec state table). */
export const OpeningStatus = Schema.Literals(["investigating", "identified", "monitoring"])
export type OpeningStatus = typeof OpeningStatus.Type

export const IncidentSeverity = Schema.Literals(["major", "minor", "maintenance"])
export type IncidentSeverity = typeof IncidentSeverity.Type

export const INCIDENT_DEFAULTS = { status: "investigating", severity: "minor" } as const

const notBlank = Schema.makeFilter((value: string) => value.trim().length > 0, { message: "must not be blank" })

export const IncidentTitle = Schema.String.check(Schema.isMaxLength(200), notBlank)
export const IncidentDescription = Schema.String.check(Schema.isMaxLength(10_000))
export const UpdateMessage = Schema.String.check(Schema.isMaxLength(10_000), notBlank)
/** Monitor ids; each must be a monitor of the caller's organization (checked by the service). */
export const AffectedMonitors = Schema.Array(Schema.String.check(Schema.isMaxLength(100))).check(
  Schema.isMaxLength(100)
)

// --- requests ----------------------------------------------------------------------------

export const CreateIncident = Schema.Struct({
  title: IncidentTitle,
  description: Schema.optional(Schema.NullOr(IncidentDescription)),
  status: Schema.optional(OpeningStatus),
  severity: Schema.optional(IncidentSeverity),
  affectedMonitors: Schema.optional(AffectedMonitors),
  message: Schema.optional(UpdateMessage),
  scheduledFor: Schema.optional(Schema.NullOr(IsoTimestamp)),
  scheduledUntil: Schema.optional(Schema.NullOr(IsoTimestamp))
}).annotate({
  examples: [{
    title: "Elevated API error rates",
    description: "Some requests to the API fail with 502.",
    severity: "major",
    affectedMonitors: []
  }]
})
export type CreateIncident = typeof CreateIncident.Type

/**
 * PATCH body. A status change requires `message` (checked against the stored status by the
 * service); `message` without a status change adds an entry with the current status.
 */
export const UpdateIncident = Schema.Struct({
  title: Schema.optional(IncidentTitle),
  description: Schema.optional(Schema.NullOr(IncidentDescription)),
  status: Schema.optional(IncidentStatus),
  severity: Schema.optional(IncidentSeverity),
  affectedMonitors: Schema.optional(AffectedMonitors),
  message: Schema.optional(UpdateMessage),
  scheduledFor: Schema.optional(Schema.NullOr(IsoTimestamp)),
  scheduledUntil: Schema.optional(Schema.NullOr(IsoTimestamp))
}).annotate({ examples: [{ status: "identified", message: "A bad deploy; rolling back." }] })
export type UpdateIncident = typeof UpdateIncident.Type

/** `POST /api/v1/incidents/{id}/updates`: `status` defaults to the incident's current one. */
export const AddIncidentUpdate = Schema.Struct({
  message: UpdateMessage,
  status: Schema.optional(IncidentStatus)
}).annotate({ examples: [{ message: "The fix is deployed; we are watching.", status: "monitoring" }] })
export type AddIncidentUpdate = typeof AddIncidentUpdate.Type

export const ListIncidentsQuery = {
  status: Schema.optional(IncidentStatus),
  limit: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 })))
}

// --- responses ---------------------------------------------------------------------------

export const IncidentUpdate = Schema.Struct({
  id: Schema.String,
  status: IncidentStatus,
  message: Schema.String,
  createdAt: Schema.String
})
export type IncidentUpdate = typeof IncidentUpdate.Type

export const Incident = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  description: Schema.NullOr(Schema.String),
  status: IncidentStatus,
  severity: IncidentSeverity,
  affectedMonitors: Schema.Array(Schema.String),
  createdAt: Schema.String,
  updatedAt: Schema.String,
  resolvedAt: Schema.NullOr(Schema.String),
  /** A maintenance window's start and end (ISO 8601), `null` without one. */
  scheduledFor: Schema.NullOr(Schema.String),
  scheduledUntil: Schema.NullOr(Schema.String),
  /** The timeline, oldest first. */
  updates: Schema.Array(IncidentUpdate)
})
export type Incident = typeof Incident.Type

export const IncidentList = Schema.Struct({ incidents: Schema.Array(Incident), count: Schema.Int })
export type IncidentList = typeof IncidentList.Type

// --- domain events -----------------------------------------------------------------------

/** Event types published (in the changing transaction) for every incident change. */
export const INCIDENT_EVENTS = {
  created: "incident.created",
  updated: "incident.updated",
  resolved: "incident.resolved",
  /** Beyond the three of GUIDE §6: lets live views drop a deleted incident. */
  deleted: "incident.deleted"
} as const
export type IncidentEventType = (typeof INCIDENT_EVENTS)[keyof typeof INCIDENT_EVENTS]

/**
 * `data` of every incident event: the incident exactly as `GET /api/v1/incidents/{id}`
 * returns it after the change (before it, for `incident.deleted`), and the timeline entry
 * the change added, or `null` when it added none (an edit of the title, say).
 */
export const IncidentEventData = Schema.Struct({
  incident: Incident,
  update: Schema.NullOr(IncidentUpdate)
})
export type IncidentEventData = typeof IncidentEventData.Type

const incidentEventTypes = new Map<string, EventType<IncidentEventData>>(
  Object.values(INCIDENT_EVENTS).map((type) => [type, eventType(type, IncidentEventData)])
)

/** The event type of an incident change, shared by the publisher (`make`) and its consumers. */
export const incidentEvent = (type: IncidentEventType): EventType<IncidentEventData> => incidentEventTypes.get(type)!

/** The decoded data of any incident event; none for another type or a malformed payload. */
export const matchIncidentEvent = (event: EventEnvelope): Option.Option<IncidentEventData> => {
  const type = incidentEventTypes.get(event.type)
  return type === undefined ? Option.none() : type.match(event)
}
