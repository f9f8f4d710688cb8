import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { type Alert, SpikeEvent, type SpikeEventData } from "../../schemas/observe/Observe.ts"
import { publishAll } from "../events/Events.ts"
import { Mailer, type MailError } from "../mail/Mailer.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { makeId } from "../platform/Ids.ts"
import { ownerEmails } from "../tenancy/Tenancy.ts"
import { organizationNameById } from "../tenancy/Tenancy.ts"
import { alertPage, insertAlerts } from "./AlertRows.ts"
import { issueTitle } from "./IssueRows.ts"
import type { Spike } from "./Spikes.ts"

/**
 * Spike alerts (GUIDE §7): stored, published as `observe.spike` (live stream, webhooks)
 * in the same transaction, listed at `/api/v1/observe/alerts`, and e-mailed to the
 * organization's owners by a durable consumer of the event (`mailOwners`).
 */

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
          yield* insertAlerts(sql, orgId, events, at)
          yield* publishAll(events.map((data) => SpikeEvent.make(orgId, data)))
        })).pipe(Effect.provideService(SqlClient.SqlClient, sql))

      const list = Effect.fn("Alerts.list")(
        function*(orgId: string, page: { readonly limit?: number | undefined; readonly offset?: number | undefined }) {
          return yield* alertPage(sql, orgId, { limit: page.limit ?? 50, offset: page.offset ?? 0 }).pipe(Effect.orDie)
        }
      )

      const mailOwners = (orgId: string, data: SpikeEventData) =>
        Effect.gen(function*() {
          const owners = yield* ownerEmails(sql, orgId)
          const org = yield* organizationNameById(sql, orgId)
          if (owners.length === 0 || Option.isNone(org)) return
          const title = data.issueId === null ? Option.none() : yield* issueTitle(sql, data.issueId)
          const what = Option.match(title, { onNone: () => "errors", onSome: (title) => `"${title}"` })
          yield* mailer.send({
            to: owners,
            subject: `[${org.value.name}] Error spike: ${what}`,
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
