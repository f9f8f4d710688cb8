import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { incidentEvent } from "../../schemas/incidents/Incidents.ts"
import { IssueCreatedEvent, IssueRegressedEvent, SpikeEvent } from "../../schemas/observe/Observe.ts"
import { organizationEvents } from "../../schemas/webhooks/Webhooks.ts"
import type { DomainEvent } from "../../services/events/Events.ts"
import { toWebhookEvent } from "../../services/webhooks/Payloads.ts"

const organization = { id: "org_1", slug: "acme" }
const createdAt = new Date("2026-11-23T10:00:05.000Z")
const payloadOf = (event: Omit<DomainEvent, "id" | "createdAt">) =>
  Option.getOrThrow(toWebhookEvent({ id: 1, createdAt, ...event } as DomainEvent)).payload(organization)

const update = {
  id: "upd_1",
  status: "investigating",
  message: "Looking",
  createdAt: "2026-11-23T10:00:00.000Z"
} as const
const incident = {
  id: "inc_1",
  title: "API errors",
  description: null,
  status: "investigating",
  severity: "major",
  affectedMonitors: [],
  createdAt: "2026-11-23T10:00:00.000Z",
  updatedAt: "2026-11-23T10:00:00.000Z",
  resolvedAt: null,
  scheduledFor: null,
  scheduledUntil: null,
  updates: [update]
} as const

/** GUIDE §13: a payload carries its object under its name, with what goes with it beside it. */
describe("organization webhook payloads", () => {
  it.effect("incident.* carries the incident as `incident`, its new timeline entry as `update`", () =>
    Effect.sync(() => {
      for (const type of ["incident.created", "incident.updated", "incident.resolved"] as const) {
        expect(payloadOf(incidentEvent(type).make("org_1", { incident, update }))).toEqual({
          event: type,
          action: type.slice("incident.".length),
          organization,
          incident,
          update,
          timestamp: createdAt.toISOString()
        })
      }
      const edited = payloadOf(incidentEvent("incident.updated").make("org_1", { incident, update: null }))
      expect(edited).toMatchObject({ incident, update: null })
    }))

  it.effect("observe.issue.* carries the issue as `issue` with its id; observe.spike the spike with its id", () =>
    Effect.sync(() => {
      for (const kind of [IssueCreatedEvent, IssueRegressedEvent]) {
        expect(payloadOf(kind.make("org_1", { issueId: "iss_1" }))).toEqual({
          event: kind.type,
          action: kind.type.slice("observe.issue.".length),
          organization,
          issue: { id: "iss_1" },
          timestamp: createdAt.toISOString()
        })
      }
      const spike = { scope: "issue", issueId: "iss_1", count: 90, baseline: 3, threshold: 30 } as const
      expect(payloadOf(SpikeEvent.make("org_1", { alertId: "alr_1", ...spike }))).toEqual({
        event: "observe.spike",
        action: "spike",
        organization,
        spike: { id: "alr_1", type: "spike", ...spike },
        timestamp: createdAt.toISOString()
      })
    }))

  it("every organization event has a payload test above", () => {
    expect([...organizationEvents].sort()).toEqual([
      "incident.created",
      "incident.resolved",
      "incident.updated",
      "monitor.degraded",
      "monitor.down",
      "monitor.up",
      "observe.issue.created",
      "observe.issue.regressed",
      "observe.spike"
    ])
  })
})
