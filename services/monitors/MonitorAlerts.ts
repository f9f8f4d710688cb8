import { Cause, Context, Duration, Effect, Layer, Option, Schedule, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { MonitorStatusEvent } from "../../schemas/monitors/Monitors.ts"
import { type DomainEvent, Events } from "../events/Events.ts"
import { renderMailHtml } from "../mail/mailLayout.ts"
import { enqueueMails, type OutboxMail } from "../mail/MailOutbox.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { decodeRows } from "../platform/Rows.ts"
import { memberEmails } from "../tenancy/Tenancy.ts"
import { latestOutcome } from "./HeartbeatRows.ts"
import { MonitorRepository } from "./MonitorRepository.ts"
import type { AlertSubject } from "./MonitorRows.ts"

/**
 * Monitor alerts (issue 8 item 6): when a monitor turns `down`, and when it comes back,
 * the organization's owners and admins and the monitor's `alertEmails` get an e-mail
 * through the durable outbox.
 *
 * - Once per transition: a durable Events consumer reads `monitor.status` in batches (all or
 *   nothing per batch); the mails' idempotency keys carry the event id, so a replayed event
 *   enqueues nothing new.
 * - Reminders: while a monitor stays down, a sweep on every runner enqueues one reminder per
 *   full hour of downtime, keyed by the outage and the hour, so runners never double up.
 */
export interface MonitorAlertsOptions {
  /** How often the reminder sweep runs. Default 1 minute. */
  readonly sweepInterval?: Duration.Input | undefined
  /** Time between reminders while down. Default 1 hour. */
  readonly reminderEvery?: Duration.Input | undefined
}

type MonitorFacts = AlertSubject

/* `monitor_alerts` (this service owns it): one row per monitor that is down and alerted. */

/** An open outage; `downEventId` is the `monitor.status` event that opened it (a bigint, read as text). */
const OpenAlert = Schema.Struct({
  monitorId: Schema.String,
  downEventId: Schema.String,
  downSince: Schema.Date,
  error: Schema.NullOr(Schema.String)
})

/** What closing an outage returns. */
const ClosedAlert = Schema.Struct({ downSince: Schema.Date })

type AlertKind = "down" | "recovered" | "reminder"

const isUp = (status: string) => status === "up" || status === "degraded"

const formatDuration = (ms: number): string => {
  const minutes = Math.max(0, Math.round(ms / 60_000))
  if (minutes < 60) return `${minutes} min`
  const hours = Math.floor(minutes / 60)
  return minutes % 60 === 0 ? `${hours} h` : `${hours} h ${minutes % 60} min`
}

export const alertMail = (options: {
  readonly kind: AlertKind
  readonly monitor: MonitorFacts
  readonly at: Date
  readonly error: string | null
  readonly downSince?: Date | undefined
  readonly statusPageUrl: string
}): Omit<OutboxMail, "idempotencyKey" | "to"> => {
  const { monitor } = options
  const subject = options.kind === "down"
    ? `[Canopy] DOWN: ${monitor.name}`
    : options.kind === "recovered"
    ? `[Canopy] RECOVERED: ${monitor.name}`
    : `[Canopy] Still down: ${monitor.name}`
  const lead = options.kind === "down"
    ? `${monitor.name} (${monitor.url}) is down.`
    : options.kind === "recovered"
    ? `${monitor.name} (${monitor.url}) is back up.`
    : `${monitor.name} (${monitor.url}) is still down.`
  const facts: Array<readonly [string, string]> = [["Monitor", monitor.name], ["URL", monitor.url]]
  if (options.kind === "recovered") facts.push(["Recovered at", options.at.toISOString()])
  else facts.push(["Down since", (options.downSince ?? options.at).toISOString()])
  if (options.kind !== "recovered" && options.error !== null) facts.push(["Error", options.error])
  if (options.kind !== "down" && options.downSince !== undefined) {
    facts.push(["Downtime", formatDuration(options.at.getTime() - options.downSince.getTime())])
  }
  const text = [
    lead,
    "",
    ...facts.map(([name, value]) => `${name}: ${value}`),
    "",
    `Status page: ${options.statusPageUrl}`,
    "",
    `You receive this as an owner or admin of ${monitor.orgName}, or as an alert address of this monitor.`
  ].join("\n")
  return {
    subject,
    text,
    html: renderMailHtml({
      heading: subject.replace("[Canopy] ", ""),
      accent: options.kind === "recovered" ? "#16a34a" : "#dc2626",
      paragraphs: [lead],
      facts,
      button: { label: "Open the status page", url: options.statusPageUrl }
    }),
    headers: { "X-Canopy-Event": `monitor.${options.kind}` }
  }
}

const make = Effect.fnUntraced(function*(options: MonitorAlertsOptions) {
  const sql = yield* SqlClient.SqlClient
  const monitors = yield* MonitorRepository
  const events = yield* Events
  const { baseUrl } = yield* AppConfig
  const reminderMs = Duration.toMillis(Duration.fromInputUnsafe(options.reminderEvery ?? "1 hour"))

  const loadMonitor = (monitorId: string) => Effect.map(monitors.alertSubject(monitorId), Option.getOrUndefined)

  /** Owners and admins of the organization, plus the monitor's own addresses, each once. */
  const recipients = (monitor: MonitorFacts) =>
    Effect.map(
      memberEmails(sql, monitor.orgId, ["owner", "admin"]),
      (emails) => [...new Set([...emails, ...monitor.alertEmails].map((e) => e.trim()))]
    )

  const statusPageUrl = (slug: string) => `${baseUrl.replace(/\/$/, "")}/status/${encodeURIComponent(slug)}`

  const enqueueAlert = (
    kind: AlertKind,
    key: string,
    monitor: MonitorFacts,
    details: { at: Date; error: string | null; downSince?: Date | undefined }
  ): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
    Effect.gen(function*() {
      const mail = alertMail({ kind, monitor, ...details, statusPageUrl: statusPageUrl(monitor.slug) })
      const to = yield* recipients(monitor)
      yield* enqueueMails(to.map((address) => ({ ...mail, to: address, idempotencyKey: `${key}:${address}` })))
    })

  const onStatus = (event: DomainEvent) =>
    Effect.gen(function*() {
      // Decoded with the event's own Schema (the one the recorder published it with).
      const decoded = MonitorStatusEvent.match(event)
      if (Option.isNone(decoded)) {
        return yield* Effect.logWarning("MonitorAlerts: malformed monitor.status event", event.id)
      }
      const data = decoded.value
      const at = new Date(data.timestamp)
      if (data.status === "down" && data.previousStatus !== "down") {
        const monitor = yield* loadMonitor(data.monitorId)
        if (monitor === undefined) {
          return
        }
        const beat = Option.getOrUndefined(yield* latestOutcome(sql, data.monitorId))
        const error = beat?.error ?? (beat?.statusCode != null ? `HTTP ${beat.statusCode}` : null)
        yield* sql`
          INSERT INTO monitor_alerts (monitor_id, down_event_id, down_since, error)
          VALUES (${data.monitorId}, ${event.id}, ${at}, ${error})
          ON CONFLICT (monitor_id) DO UPDATE SET down_event_id = EXCLUDED.down_event_id,
            down_since = EXCLUDED.down_since, error = EXCLUDED.error`
        yield* enqueueAlert("down", `monitor-down:${event.id}`, monitor, { at, error })
      } else if (data.previousStatus === "down" && isUp(data.status)) {
        const [alert] = yield* sql`
          DELETE FROM monitor_alerts WHERE monitor_id = ${data.monitorId} RETURNING down_since AS "downSince"`.pipe(
          decodeRows(ClosedAlert)
        )
        const monitor = yield* loadMonitor(data.monitorId)
        if (monitor === undefined) return
        yield* enqueueAlert("recovered", `monitor-up:${event.id}`, monitor, {
          at,
          error: null,
          downSince: alert?.downSince
        })
      }
    })

  const sweepReminders = sql.withTransaction(Effect.gen(function*() {
    const due = yield* sql`
      SELECT a.monitor_id AS "monitorId", a.down_event_id::text AS "downEventId", a.down_since AS "downSince", a.error
      FROM monitor_alerts a
      WHERE a.down_since <= now() - make_interval(secs => ${reminderMs / 1000})`.pipe(decodeRows(OpenAlert))
    // Reminders only while the monitor is still active and down.
    const stillDown = yield* monitors.activeDown(due.map((alert) => alert.monitorId))
    const now = new Date()
    for (const alert of due) {
      if (!stillDown.has(alert.monitorId)) continue
      const monitor = yield* loadMonitor(alert.monitorId)
      if (monitor === undefined) continue
      const period = Math.floor((now.getTime() - alert.downSince.getTime()) / reminderMs)
      yield* enqueueAlert("reminder", `monitor-reminder:${alert.downEventId}:${period}`, monitor, {
        at: now,
        error: alert.error,
        downSince: alert.downSince
      })
    }
  }))

  /**
   * A batch of `monitor.status` events in outbox order. Only transitions of monitors that
   * still exist can alert, and one statement finds those for the whole batch, so a burst of
   * events about deleted monitors costs one query, not one savepoint and query each.
   */
  const onStatuses = (batch: ReadonlyArray<DomainEvent>) =>
    Effect.gen(function*() {
      // Each event decoded once here (`onStatus` decodes again only events it handles).
      const decoded = batch.map((event) => MonitorStatusEvent.match(event))
      const ids = [...new Set(decoded.flatMap((data) => Option.isSome(data) ? [data.value.monitorId] : []))]
      const known = yield* monitors.existingIds(ids)
      for (let n = 0; n < batch.length; n++) {
        const data = decoded[n]
        if (Option.isSome(data) && !known.has(data.value.monitorId)) continue
        yield* onStatus(batch[n])
      }
    })

  const sweep = sweepReminders.pipe(Effect.provideService(SqlClient.SqlClient, sql))
  yield* events.consumeBatch("notifications.monitor-alerts", onStatuses, { types: ["monitor.status"], from: "now" })
  yield* sweep.pipe(
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.logWarning("MonitorAlerts: sweep failed", cause)
    ),
    Effect.repeat(Schedule.spaced(options.sweepInterval ?? "1 minute")),
    Effect.forkScoped
  )
  return MonitorAlerts.of({ sweepReminders: sweep })
})

export class MonitorAlerts extends Context.Service<MonitorAlerts, {
  /** Enqueues the reminders that are due now (the layer runs this every sweep interval). */
  readonly sweepReminders: Effect.Effect<void, SqlError>
}>()("canopy/monitors/MonitorAlerts") {
  static readonly layerWith = (options: MonitorAlertsOptions = {}) =>
    Layer.effect(MonitorAlerts, make(options)).pipe(Layer.provide(MonitorRepository.layer))
  static readonly layer = MonitorAlerts.layerWith()
}
