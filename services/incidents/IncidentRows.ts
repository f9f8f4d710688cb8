import { Schema } from "effect"
import { type Incident, IncidentSeverity, IncidentStatus, IncidentUpdate } from "../../schemas/incidents/Incidents.ts"
import { Int8 } from "../platform/Rows.ts"

/**
 * The shapes `Incidents` reads from the `incidents` table (with its timeline and monitor
 * links joined), as Schemas: every row is decoded with one of these.
 */

/** An incident with its timeline (`json_agg`, oldest first, timestamps ISO strings) and affected monitors. */
export const IncidentRow = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  description: Schema.NullOr(Schema.String),
  status: IncidentStatus,
  severity: IncidentSeverity,
  created_at: Schema.Date,
  updated_at: Schema.Date,
  resolved_at: Schema.NullOr(Schema.Date),
  scheduled_for: Schema.NullOr(Schema.Date),
  scheduled_until: Schema.NullOr(Schema.Date),
  updates: Schema.Array(IncidentUpdate),
  affected_monitors: Schema.Array(Schema.String)
})
export type IncidentRow = typeof IncidentRow.Type

/** An incident of a page, with the number of incidents matching the page's filter. */
export const IncidentPageRow = Schema.Struct({ ...IncidentRow.fields, total: Int8 })

/** What a change needs of the incident it locked. */
export const LockedIncident = Schema.Struct({
  status: IncidentStatus,
  resolved_at: Schema.NullOr(Schema.Date),
  severity: IncidentSeverity,
  scheduled_for: Schema.NullOr(Schema.Date),
  scheduled_until: Schema.NullOr(Schema.Date)
})

/** An unresolved incident, for the status summary. */
export const ActiveIncidentRow = Schema.Struct({
  id: Schema.String,
  severity: IncidentSeverity,
  updated_at: Schema.Date
})

export const LastChange = Schema.Struct({ at: Schema.NullOr(Schema.Date) })

export const toIncident = (row: IncidentRow): Incident => ({
  id: row.id,
  title: row.title,
  description: row.description,
  status: row.status,
  severity: row.severity,
  affectedMonitors: row.affected_monitors,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
  resolvedAt: row.resolved_at?.toISOString() ?? null,
  scheduledFor: row.scheduled_for?.toISOString() ?? null,
  scheduledUntil: row.scheduled_until?.toISOString() ?? null,
  updates: row.updates
})
