import { Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"
import {
  type Incident,
  IncidentSeverity,
  IncidentStatus,
  IncidentUpdate,
  type UpdateIncident
} from "../../schemas/incidents/Incidents.ts"
import { decodeRows, Int8 } from "../platform/Rows.ts"

/*
 * The `incidents` and `incident_updates` tables: their rows (with the timeline and monitor
 * links joined) and every statement on them. Each takes the caller's `SqlClient`, so it
 * runs in the caller's transaction (`Incidents` is their one owner).
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

/** A timestamp column as the ISO string the API shows (inside `json_build_object`). */
const iso = (sql: SqlClient.SqlClient, column: string) =>
  sql.literal(`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`)

/**
 * Incidents with their timeline and affected monitors, in one query. The page is cut
 * first, so only its rows have their timelines aggregated; `total` counts every match.
 */
export const selectIncidents = (sql: SqlClient.SqlClient, where: Fragment, tail: Fragment = sql.literal("")) =>
  sql`
    WITH page AS (
      SELECT i.*, count(*) OVER () AS total FROM incidents i
      WHERE ${where}
      ORDER BY i.created_at DESC, i.seq DESC
      ${tail}
    )
    SELECT p.id, p.title, p.description, p.status, p.severity, p.created_at, p.updated_at, p.resolved_at, p.total,
      p.scheduled_for, p.scheduled_until,
      coalesce((
        SELECT json_agg(json_build_object(
          'id', u.id, 'status', u.status, 'message', u.message, 'createdAt', ${iso(sql, "u.created_at")}
        ) ORDER BY u.seq)
        FROM incident_updates u WHERE u.incident_id = p.id
      ), '[]'::json) AS updates,
      coalesce((
        SELECT json_agg(m.monitor_id ORDER BY m.position) FROM incident_monitors m WHERE m.incident_id = p.id
      ), '[]'::json) AS affected_monitors
    FROM page p
    ORDER BY p.created_at DESC, p.seq DESC`.pipe(decodeRows(IncidentPageRow))

export interface NewIncidentRow {
  readonly id: string
  readonly orgId: string
  readonly title: string
  readonly description: string | null
  readonly status: IncidentStatus
  readonly severity: IncidentSeverity
  readonly at: Date
  /** A maintenance window (null: none). */
  readonly scheduledFor: Date | null
  readonly scheduledUntil: Date | null
}

export const insertIncident = (sql: SqlClient.SqlClient, row: NewIncidentRow) =>
  sql`
    INSERT INTO incidents (id, org_id, title, description, status, severity, created_at, updated_at,
                           scheduled_for, scheduled_until)
    VALUES (${row.id}, ${row.orgId}, ${row.title}, ${row.description}, ${row.status},
            ${row.severity}, ${row.at.toISOString()}::timestamptz, ${row.at.toISOString()}::timestamptz,
            ${row.scheduledFor?.toISOString() ?? null}::timestamptz,
            ${row.scheduledUntil?.toISOString() ?? null}::timestamptz)`

export const insertIncidentUpdate = (sql: SqlClient.SqlClient, incidentId: string, update: IncidentUpdate) =>
  sql`
    INSERT INTO incident_updates (id, incident_id, status, message, created_at)
    VALUES (${update.id}, ${incidentId}, ${update.status}, ${update.message}, ${update.createdAt}::timestamptz)`

/** Locks the incident row for the rest of the transaction; its current status and resolvedAt (none: not found). */
export const lockIncident = (sql: SqlClient.SqlClient, orgId: string, id: string) =>
  sql`SELECT status, resolved_at, severity, scheduled_for, scheduled_until
    FROM incidents WHERE id = ${id} AND org_id = ${orgId} FOR UPDATE`.pipe(
    decodeRows(LockedIncident)
  )

/** Sets the status, and `resolved_at` to `resolvedAt` (an SQL expression: NULL, kept, or a time). */
/** An incident by id within its organization (a list of one, or none). */
export const incidentById = (sql: SqlClient.SqlClient, orgId: string, id: string) =>
  selectIncidents(sql, sql`i.org_id = ${orgId} AND i.id = ${id}`)

/** A page of the organization's incidents, newest first: all, one status, or the unresolved ones. */
export const listIncidents = (
  sql: SqlClient.SqlClient,
  orgId: string,
  options: { readonly status?: IncidentStatus | undefined; readonly unresolved?: boolean | undefined },
  limit: number
) => {
  const filter = options.status !== undefined
    ? sql`AND i.status = ${options.status}`
    : options.unresolved === true
    ? sql`AND i.status <> 'resolved'`
    : sql.literal("")
  return selectIncidents(sql, sql`i.org_id = ${orgId} ${filter}`, sql`LIMIT ${limit}`)
}

/** What a status change does to `resolved_at`: clears it, keeps it, or sets it to an instant. */
export type ResolvedAt = "clear" | "keep" | Date

export const setIncidentStatus = (
  sql: SqlClient.SqlClient,
  id: string,
  status: IncidentStatus,
  resolved: ResolvedAt
) => {
  const resolvedAt = resolved === "clear"
    ? sql`NULL`
    : resolved === "keep"
    ? sql`resolved_at`
    : sql`${resolved.toISOString()}::timestamptz`
  return sql`UPDATE incidents SET status = ${status}, resolved_at = ${resolvedAt} WHERE id = ${id}`
}

/** Sets the fields of `patch` that are given (the others keep their value) and `updated_at`. */
/** Writes the edited fields; `window` is the maintenance window after the edit (checked by the caller). */
export const updateIncidentFields = (
  sql: SqlClient.SqlClient,
  id: string,
  patch: UpdateIncident,
  window: { readonly from: Date | null; readonly until: Date | null },
  at: Date
) =>
  sql`
    UPDATE incidents SET
      title = ${patch.title ?? sql`title`},
      description = ${patch.description !== undefined ? patch.description : sql`description`},
      severity = ${patch.severity ?? sql`severity`},
      scheduled_for = ${window.from?.toISOString() ?? null}::timestamptz,
      scheduled_until = ${window.until?.toISOString() ?? null}::timestamptz,
      updated_at = ${at.toISOString()}::timestamptz
    WHERE id = ${id}`

export const touchIncident = (sql: SqlClient.SqlClient, id: string, at: Date) =>
  sql`UPDATE incidents SET updated_at = ${at.toISOString()}::timestamptz WHERE id = ${id}`

/** Deletes the incident; its updates and monitor links go with it (ON DELETE CASCADE). */
export const deleteIncident = (sql: SqlClient.SqlClient, id: string) => sql`DELETE FROM incidents WHERE id = ${id}`

/** The unresolved incidents, newest first. */
export const activeIncidents = (sql: SqlClient.SqlClient, orgId: string) =>
  sql`
    SELECT id, severity, updated_at FROM incidents WHERE org_id = ${orgId} AND status <> 'resolved'
    ORDER BY created_at DESC, seq DESC`.pipe(decodeRows(ActiveIncidentRow))

/** When any incident of the organization last changed (null: none). */
export const lastIncidentChange = (sql: SqlClient.SqlClient, orgId: string) =>
  sql`SELECT max(updated_at) AS at FROM incidents WHERE org_id = ${orgId}`.pipe(decodeRows(LastChange))
