import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { matchIncidentEvent } from "../../schemas/incidents/Incidents.ts"
import { type DomainEvent, Events } from "../events/Events.ts"
import { renderMailHtml } from "../mail/mailLayout.ts"
import { enqueueMails, type OutboxMail } from "../mail/MailOutbox.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { componentsWithMonitors } from "../status/Components.ts"
import { organizationNameById } from "../tenancy/Tenancy.ts"
import { SigningSecret } from "./SigningSecret.ts"
import { subscribersConfirmedBy } from "./SubscriberRows.ts"
import { unsubscribePayload } from "./Subscriptions.ts"

/**
 * E-mails status page subscribers about incidents (GUIDE §6): a durable Events consumer
 * reads `incident.created` / `incident.updated` / `incident.resolved` and, for every event
 * that adds a timeline entry (creation, status change, resolution, posted update), enqueues
 * one mail per confirmed subscriber in the same transaction as its cursor. Edits without a
 * new entry (a title typo) send nothing. A subscriber with a component filter hears about
 * incidents touching those components' monitors, and about incidents that name no monitor.
 * Every mail carries its unsubscribe link (and RFC 8058 one-click headers).
 */
const statusLabel: Record<string, string> = {
  investigating: "Investigating",
  identified: "Identified",
  monitoring: "Monitoring",
  resolved: "Resolved"
}

export const SubscriberNotificationsLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* Events
    const signing = yield* SigningSecret
    const base = (yield* AppConfig).baseUrl.replace(/\/$/, "")

    /** Components that contain any of the monitors (the incident's affected ones). */
    const componentsOf = (orgId: string, monitorIds: ReadonlyArray<string>) =>
      componentsWithMonitors(sql, orgId, monitorIds)

    /** Subscribers confirmed before the event (a late consumer must not widen the audience). */
    const recipients = (event: DomainEvent & { orgId: string }, affectedMonitors: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const orgId = event.orgId
        const subscribers = yield* subscribersConfirmedBy(sql, orgId, event.createdAt)
        const filtered = subscribers.some((s) => s.components !== null) && affectedMonitors.length > 0
        if (!filtered) return subscribers
        const affected = yield* componentsOf(orgId, affectedMonitors)
        return subscribers.filter((s) => s.components === null || s.components.some((id) => affected.has(id)))
      })

    const onIncident = (event: DomainEvent) =>
      Effect.gen(function*() {
        const data = Option.getOrUndefined(matchIncidentEvent(event))
        if (event.orgId === null || data === undefined) return
        const { incident, update } = data
        if (update === null) return
        // The organization whose status page the mails link to.
        const org = Option.getOrUndefined(yield* organizationNameById(sql, event.orgId))
        if (org === undefined) return
        const to = yield* recipients({ ...event, orgId: event.orgId }, incident.affectedMonitors ?? [])
        const page = `${base}/status/${org.slug}`
        const label = statusLabel[update.status] ?? update.status
        const subject = `[${org.name}] ${label}: ${incident.title}`
        const tokens = yield* Effect.forEach(to, (subscriber) => signing.sign(unsubscribePayload(subscriber.id)))
        const mails = to.map((subscriber, index): OutboxMail => {
          const unsubscribe = `${base}/api/v1/subscribe/unsubscribe?token=${encodeURIComponent(tokens[index])}`
          return {
            idempotencyKey: `incident:${event.id}:${subscriber.id}`,
            to: subscriber.email,
            subject,
            text: [
              `${incident.title}`,
              `${label} (${incident.severity}) at ${update.createdAt}`,
              "",
              update.message,
              "",
              `Status page: ${page}`,
              "",
              `You receive this because you subscribed to ${org.name} status updates.`,
              `Unsubscribe: ${unsubscribe}`
            ].join("\n"),
            html: renderMailHtml({
              heading: incident.title,
              accent: update.status === "resolved" ? "#16a34a" : incident.severity === "major" ? "#dc2626" : "#d97706",
              paragraphs: [update.message],
              facts: [["Status", label], ["Severity", incident.severity], ["Posted", update.createdAt]],
              button: { label: "View the status page", url: page },
              footer: { label: "Unsubscribe from these e-mails", url: unsubscribe }
            }),
            headers: {
              "List-Unsubscribe": `<${unsubscribe}>`,
              "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
              "X-Canopy-Event": event.type
            }
          }
        })
        yield* enqueueMails(mails)
      })

    yield* events.consume("notifications.subscribers", onIncident, {
      types: ["incident.created", "incident.updated", "incident.resolved"],
      from: "now"
    })
  })
)
