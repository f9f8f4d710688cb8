import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import {
  type AddIncidentUpdate,
  type CreateIncident,
  type Incident,
  INCIDENT_DEFAULTS,
  INCIDENT_EVENTS,
  incidentEvent,
  type IncidentEventType,
  type IncidentList,
  type IncidentSeverity,
  type IncidentStatus,
  type IncidentUpdate,
  type UpdateIncident
} from "../../schemas/incidents/Incidents.ts"
import { type FieldIssue, monitorValidationError, parseIsoTimestamp } from "../../schemas/monitors/Monitors.ts"
import { NotFound, ValidationError } from "../../schemas/platform/Errors.ts"
import { publish } from "../events/Events.ts"
import { MonitorRepository } from "../monitors/MonitorRepository.ts"
import { makeId } from "../platform/Ids.ts"
import { inTransaction } from "../platform/Rows.ts"
import {
  activeIncidents,
  deleteIncident,
  incidentById,
  insertIncident,
  insertIncidentUpdate,
  lastIncidentChange,
  listIncidents,
  lockIncident,
  setIncidentStatus,
  toIncident,
  touchIncident,
  updateIncidentFields
} from "./IncidentRows.ts"
import { foreignMonitorIssues, replaceMonitorLinks } from "./MonitorLinks.ts"

export interface ListIncidentsOptions {
  readonly status?: IncidentStatus | undefined
  /** Only those not resolved (ignored when `status` is given); for public pages. */
  readonly unresolved?: boolean | undefined
  /** 1–100, default 50. */
  readonly limit?: number | undefined
}

/** An unresolved incident's weight in the overall status (GUIDE §6). */
export interface ActiveIncident {
  readonly id: string
  readonly severity: IncidentSeverity
  readonly updatedAt: Date
}

/**
 * Incidents of an organization and their timelines (spec incident state table, GUIDE §6).
 * Every method is scoped by `orgId`; another organization's incident is a `NotFound`.
 * Every change publishes `incident.created|updated|resolved` (`incident.deleted` on delete)
 * with `IncidentEventData` (the shared `incidentEvent` types), in the transaction that makes the change.
 */
const toDate = (value: string | null | undefined) =>
  value === null || value === undefined ? undefined : parseIsoTimestamp(value)

/** A window needs a start, an end after it, and a `maintenance` incident. */
const windowIssues = (
  severity: string,
  window: { readonly from: Date | undefined; readonly until: Date | undefined }
): ReadonlyArray<FieldIssue> => {
  if (window.from === undefined && window.until === undefined) return []
  if (severity !== "maintenance") {
    return [{ field: "scheduledFor", message: "only a maintenance incident has a scheduled window" }]
  }
  if (window.from === undefined) return [{ field: "scheduledFor", message: "is required with scheduledUntil" }]
  if (window.until !== undefined && window.until.getTime() <= window.from.getTime()) {
    return [{ field: "scheduledUntil", message: "must be after scheduledFor" }]
  }
  return []
}

export class Incidents extends Context.Service<Incidents, {
  create(orgId: string, input: CreateIncident): Effect.Effect<Incident, ValidationError>
  /** Newest first; `count` is the total matching `status`. */
  list(orgId: string, options?: ListIncidentsOptions): Effect.Effect<IncidentList>
  get(orgId: string, id: string): Effect.Effect<Incident, NotFound>
  update(orgId: string, id: string, patch: UpdateIncident): Effect.Effect<Incident, NotFound | ValidationError>
  addUpdate(orgId: string, id: string, input: AddIncidentUpdate): Effect.Effect<IncidentUpdate, NotFound>
  remove(orgId: string, id: string): Effect.Effect<void, NotFound>
  /** Unresolved incidents (for the status summary), newest first. */
  active(orgId: string): Effect.Effect<ReadonlyArray<ActiveIncident>>
  /** When any incident of the organization last changed, if one exists. */
  lastChangedAt(orgId: string): Effect.Effect<Date | undefined>
}>()("canopy/incidents/Incidents") {
  static readonly layer = Layer.effect(
    Incidents,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const monitors = yield* MonitorRepository
      const notFound = (id: string) => new NotFound({ message: `Incident '${id}' not found` })
      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
      const load = (orgId: string, id: string) =>
        Effect.flatMap(
          incidentById(sql, orgId, id),
          (rows) => rows.length === 0 ? Effect.fail(notFound(id)) : Effect.succeed(toIncident(rows[0]))
        )

      const checkMonitors = (orgId: string, ids: ReadonlyArray<string> | undefined) =>
        ids === undefined
          ? Effect.succeed<ReadonlyArray<FieldIssue>>([])
          : foreignMonitorIssues(monitors, orgId, "affectedMonitors", ids)

      const setMonitors = (id: string, ids: ReadonlyArray<string>) =>
        replaceMonitorLinks({ table: "incident_monitors", ownerColumn: "incident_id" }, id, ids)

      const insertUpdate = (incidentId: string, status: IncidentStatus, message: string, at: Date) =>
        Effect.gen(function*() {
          const update: IncidentUpdate = { id: makeId("upd"), status, message, createdAt: at.toISOString() }
          yield* insertIncidentUpdate(sql, incidentId, update)
          return update
        })

      /** Reads the incident back inside the transaction and publishes the event for the change. */
      const announce = (orgId: string, id: string, type: IncidentEventType, update: IncidentUpdate | null) =>
        Effect.gen(function*() {
          const incident = yield* load(orgId, id).pipe(
            // Read in the transaction that just wrote it: a missing row is a bug, not a 404.
            Effect.catch((error) => error instanceof NotFound ? Effect.die(error) : Effect.fail(error))
          )
          yield* publish(incidentEvent(type).make(orgId, { incident, update }))
          return incident
        })

      const create = Effect.fn("Incidents.create")(function*(orgId: string, input: CreateIncident) {
        const status = input.status ?? INCIDENT_DEFAULTS.status
        const at = yield* now
        const id = makeId("inc")
        return yield* inTransaction(
          sql,
          Effect.gen(function*() {
            const severity = input.severity ?? INCIDENT_DEFAULTS.severity
            const window = { from: toDate(input.scheduledFor), until: toDate(input.scheduledUntil) }
            const issues = [...(yield* checkMonitors(orgId, input.affectedMonitors)), ...windowIssues(severity, window)]
            if (issues.length > 0) return yield* monitorValidationError(issues)
            yield* insertIncident(sql, {
              id,
              orgId,
              title: input.title,
              description: input.description ?? null,
              status,
              severity,
              at,
              scheduledFor: window.from ?? null,
              scheduledUntil: window.until ?? null
            })
            yield* setMonitors(id, input.affectedMonitors ?? [])
            // GUIDE §6: the first entry says `message`, else the description, else the title.
            const first = input.message ?? (input.description?.trim() ? input.description : undefined) ?? input.title
            const update = yield* insertUpdate(id, status, first, at)
            return yield* announce(orgId, id, INCIDENT_EVENTS.created, update)
          })
        )
      })

      const list = Effect.fn("Incidents.list")(function*(orgId: string, options?: ListIncidentsOptions) {
        const limit = Math.min(100, Math.max(1, Math.trunc(options?.limit ?? 50)))
        const rows = yield* listIncidents(sql, orgId, options ?? {}, limit).pipe(
          Effect.orDie
        )
        return { incidents: rows.map(toIncident), count: rows.length > 0 ? rows[0].total : 0 }
      })

      const get = Effect.fn("Incidents.get")(function*(orgId: string, id: string) {
        return yield* load(orgId, id).pipe(Effect.catchTag("SqlError", Effect.die))
      })

      /** Locks the incident row for the rest of the transaction; its current status and resolvedAt. */
      const lock = (orgId: string, id: string) =>
        Effect.flatMap(
          lockIncident(sql, orgId, id),
          (rows) => rows.length === 0 ? Effect.fail(notFound(id)) : Effect.succeed(rows[0])
        )

      /**
       * Moves the incident to `status` at `at`: entering `resolved` sets `resolvedAt` (kept
       * when it was resolved already), leaving it clears it. Returns the event type.
       */
      const transition = (id: string, from: IncidentStatus, to: IncidentStatus, at: Date) =>
        Effect.gen(function*() {
          yield* setIncidentStatus(sql, id, to, to !== "resolved" ? "clear" : from === "resolved" ? "keep" : at)
          return to === "resolved" && from !== "resolved" ? INCIDENT_EVENTS.resolved : INCIDENT_EVENTS.updated
        })

      const update = Effect.fn("Incidents.update")(function*(orgId: string, id: string, patch: UpdateIncident) {
        const at = yield* now
        return yield* inTransaction(
          sql,
          Effect.gen(function*() {
            const current = yield* lock(orgId, id)
            // An empty body changes nothing: no write, no event.
            if (Object.values(patch).every((value) => value === undefined)) return yield* load(orgId, id)
            const window = {
              from: patch.scheduledFor !== undefined ? toDate(patch.scheduledFor) : current.scheduled_for ?? undefined,
              until: patch.scheduledUntil !== undefined
                ? toDate(patch.scheduledUntil)
                : current.scheduled_until ?? undefined
            }
            const windowChanged = patch.scheduledFor !== undefined || patch.scheduledUntil !== undefined ||
              patch.severity !== undefined
            const issues: Array<FieldIssue> = [
              ...(yield* checkMonitors(orgId, patch.affectedMonitors)),
              ...(windowChanged ? windowIssues(patch.severity ?? current.severity, window) : [])
            ]
            const statusChanges = patch.status !== undefined && patch.status !== current.status
            if (statusChanges && patch.message === undefined) {
              issues.push({ field: "message", message: "is required with a status change" })
            }
            if (issues.length > 0) return yield* monitorValidationError(issues)
            yield* updateIncidentFields(sql, id, patch, { from: window.from ?? null, until: window.until ?? null }, at)
            if (patch.affectedMonitors !== undefined) yield* setMonitors(id, patch.affectedMonitors)
            const status = patch.status ?? current.status
            const type = yield* transition(id, current.status, status, at)
            const entry = patch.message === undefined ? null : yield* insertUpdate(id, status, patch.message, at)
            return yield* announce(orgId, id, type, entry)
          })
        )
      })

      const addUpdate = Effect.fn("Incidents.addUpdate")(
        function*(orgId: string, id: string, input: AddIncidentUpdate) {
          const at = yield* now
          return yield* inTransaction(
            sql,
            Effect.gen(function*() {
              const current = yield* lock(orgId, id)
              const status = input.status ?? current.status
              const type = yield* transition(id, current.status, status, at)
              yield* touchIncident(sql, id, at)
              const entry = yield* insertUpdate(id, status, input.message, at)
              yield* announce(orgId, id, type, entry)
              return entry
            })
          )
        }
      )

      const remove = Effect.fn("Incidents.remove")(function*(orgId: string, id: string) {
        yield* inTransaction(
          sql,
          Effect.gen(function*() {
            yield* lock(orgId, id)
            const incident = yield* load(orgId, id)
            yield* deleteIncident(sql, id)
            yield* publish(incidentEvent(INCIDENT_EVENTS.deleted).make(orgId, { incident, update: null }))
          })
        )
      })

      const active = Effect.fn("Incidents.active")(function*(orgId: string) {
        const rows = yield* activeIncidents(sql, orgId).pipe(Effect.orDie)
        return rows.map((row) => ({ id: row.id, severity: row.severity, updatedAt: row.updated_at }))
      })

      const lastChangedAt = Effect.fn("Incidents.lastChangedAt")(function*(orgId: string) {
        const rows = yield* lastIncidentChange(sql, orgId).pipe(Effect.orDie)
        return rows[0]?.at ?? undefined
      })

      return Incidents.of({ create, list, get, update, addUpdate, remove, active, lastChangedAt })
    })
  ).pipe(Layer.provide(MonitorRepository.layer))
}
