import { describe, expect, it } from "@effect/vitest"
import { Option } from "effect"
import { MonitorStatusEvent } from "../../schemas/monitors/Monitors.ts"
import { ApiKeyRevokedEvent } from "../../schemas/tenancy/Tenancy.ts"

/** One Schema per domain event type, shared by the publisher (`make`) and consumers (`match`). */
describe("domain event types", () => {
  const status = {
    monitorId: "mon_1",
    name: "Homepage",
    status: "down",
    previousStatus: "up",
    timestamp: "2026-11-23T10:00:00.000Z"
  } as const

  it("a published event reads back as the data it was made from", () => {
    const event = MonitorStatusEvent.make("org_1", status)
    expect(event).toEqual({ type: "monitor.status", orgId: "org_1", data: status })
    // As a consumer sees it after the outbox (JSON round trip).
    const stored = { ...event, data: JSON.parse(JSON.stringify(event.data)) }
    expect(MonitorStatusEvent.match(stored)).toEqual(Option.some(status))
  })

  it("another type, or data that does not fit the Schema, matches nothing", () => {
    expect(Option.isNone(ApiKeyRevokedEvent.match(MonitorStatusEvent.make("org_1", status)))).toBe(true)
    const malformed = { type: "monitor.status", orgId: "org_1", data: { ...status, status: "sideways" } }
    expect(Option.isNone(MonitorStatusEvent.match(malformed))).toBe(true)
    expect(Option.isNone(ApiKeyRevokedEvent.match({ type: "apikey.revoked", data: null }))).toBe(true)
  })
})
