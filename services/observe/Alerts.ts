import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { type Alert, SpikeEvent, type SpikeEventData } from "../../schemas/Observe.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { publishAll } from "../platform/Events.ts"
import { makeId } from "../platform/Ids.ts"
import { Mailer, type MailError } from "../platform/Mailer.ts"
import type { Spike } from "./Spikes.ts"

/**
 * Spike alerts (GUIDE §7): stored, published as `observe.spike` (live stream, webhooks)
 * in the same transaction, listed at `/api/v1/observe/alerts`, and e-mailed to the
 * organization's owners by a durable consumer of the event (`mailOwners`).
 */

interface AlertRow {
  readonly id: string
  readonly issue_id: string | null
  readonly count: number
  readonly baseline: number
  readonly threshold: number
  readonly created_at: Date
}

const toAlert = (row: AlertRow): Alert => ({
  id: row.id,
  type: "spike",
  scope: row.issue_id === null ? "organization" : "issue",
  issueId: row.issue_id,
  count: row.count,
  baseline: row.baseline,
  threshold: row.threshold,
  createdAt: row.created_at.toISOString()
})

export class Alerts extends Context.Service<Alerts, {
  raise(orgId: string, spikes: ReadonlyArray<Spike>, at: number): Effect.Effect<void, SqlError>
  list(
    orgId: string,
    page: { readonly limit?: number | undefined; readonly offset?: number | undefined }
  ): Effect.Effect<{ alerts: ReadonlyArray<Alert>; count: number }>
  /** E-mails one `observe.spike` event to the organization's owners. */
  mailOwners(orgId: string, data: SpikeEventData): Effect.Effect<void, SqlError | MailError>
}>()("canopy/observe/Alerts") {
  static readonly layer = Layer.effect(
    Alerts,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const mailer = yield* Mailer
      const { baseUrl } = yield* AppConfig

      const raise = (orgId: string, spikes: ReadonlyArray<Spike>, at: number) =>
        sql.withTransaction(Effect.gen(function*() {
          const events: Array<SpikeEventData> = spikes.map((spike) => ({
            alertId: makeId("alr"),
            scope: spike.subject === "org" ? "organization" : "issue",
            issueId: spike.subject === "org" ? null : spike.subject,
            count: spike.count,
            baseline: spike.baseline,
            threshold: spike.threshold
          }))
          yield* sql`
            INSERT INTO observe_alerts (id, org_id, issue_id, count, baseline, threshold, created_at)
            SELECT v."alertId", ${orgId}, v."issueId", v.count, v.baseline, v.threshold, to_timestamp(${at} / 1000.0)
            FROM json_to_recordset(${JSON.stringify(events)}::json) AS v("alertId" text, "issueId" text, count int,
              baseline real, threshold real)`
          yield* publishAll(events.map((data) => SpikeEvent.make(orgId, data)))
        })).pipe(Effect.provideService(SqlClient.SqlClient, sql))

      const list = Effect.fn("Alerts.list")(
        function*(orgId: string, page: { readonly limit?: number | undefined; readonly offset?: number | undefined }) {
          const rows = yield* sql<AlertRow & { total: string }>`
            SELECT *, count(*) OVER () AS total FROM observe_alerts WHERE org_id = ${orgId}
            ORDER BY created_at DESC, id DESC LIMIT ${page.limit ?? 50} OFFSET ${page.offset ?? 0}`.pipe(Effect.orDie)
          return { alerts: rows.map(toAlert), count: rows.length === 0 ? 0 : Number(rows[0].total) }
        }
      )

      const mailOwners = (orgId: string, data: SpikeEventData) =>
        Effect.gen(function*() {
          // Read here rather than through Tenancy: one join, only for this notification.
          const owners = yield* sql<{ email: string; org_name: string }>`
            SELECT u.email, o.name AS org_name FROM memberships m
            JOIN users u ON u.id = m.user_id JOIN organizations o ON o.id = m.org_id
            WHERE m.org_id = ${orgId} AND m.role = 'owner'`
          if (owners.length === 0) return
          const issue = data.issueId === null
            ? undefined
            : (yield* sql<{ title: string }>`SELECT title FROM observe_issues WHERE id = ${data.issueId}`)[0]
          const what = issue === undefined ? "errors" : `"${issue.title}"`
          yield* mailer.send({
            to: owners.map((owner) => owner.email),
            subject: `[${owners[0].org_name}] Error spike: ${what}`,
            text: [
              `${data.count} events of ${what} in the last 5 minutes`,
              `(usual: ${data.baseline.toFixed(1)} per 5 minutes; alert threshold ${data.threshold.toFixed(1)}).`,
              "",
              data.issueId === null
                ? `Issues: ${baseUrl}/api/v1/observe/issues`
                : `Issue: ${baseUrl}/api/v1/observe/issues/${data.issueId}`
            ].join("\n")
          })
        })

      return Alerts.of({ raise, list, mailOwners })
    })
  )
}
