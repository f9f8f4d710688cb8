import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { decodeRows } from "../../services/platform/Rows.ts"
import { expectDeliverySpan, startOtlpReceiver, tracingTo } from "../platform/otlpReceiver.ts"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { startReceiver } from "./receiver.ts"

const traceId = "0af7651916cd43dd8448eb211c80319c"
const parentId = "b7ad6b7169203331"

const Stored = Schema.Struct({ traceparent: Schema.NullOr(Schema.String) })

/**
 * A delivery caused by a domain event (not a test ping) continues the trace of the request
 * that published the event: the `traceparent` goes through the outbox row and the delivery
 * row, so it holds on any runner and after a restart.
 */
describe("webhook deliveries of domain events carry the publishing request's trace", () => {
  const incidentHook = (app: { readonly baseUrl: string }, url: string, slug: string, traceparent?: string) =>
    Effect.gen(function*() {
      const { key } = yield* bootstrapOrg(app.baseUrl, { slug, plan: "enterprise" })
      const created = yield* request(`${app.baseUrl}/api/v1/webhooks`, {
        method: "POST",
        token: key,
        body: { url, events: ["incident.created"] }
      })
      expect(created.status).toBe(201)
      const incident = yield* request(`${app.baseUrl}/api/v1/incidents`, {
        method: "POST",
        token: key,
        body: { title: "Outage", severity: "major" },
        ...(traceparent === undefined ? {} : { headers: { traceparent } })
      })
      expect(incident.status).toBe(201)
    })

  it.live("an incident created with a traceparent: the delivery's traceparent has its trace id", () =>
    Effect.gen(function*() {
      const otlp = yield* startOtlpReceiver
      const receiver = yield* startReceiver()
      const app = yield* startApp({ tracing: tracingTo(otlp.url) })
      yield* incidentHook(app, receiver.url(), "traced-event", `00-${traceId}-${parentId}-01`)

      const [delivery] = yield* eventually(
        "the incident.created delivery",
        Effect.sync(() => receiver.on("/hook")),
        (received) => received.length > 0
      )
      expect(delivery.headers["x-service-event"]).toBe("incident.created")
      const header = String(delivery.headers.traceparent)
      // The span it names is the delivery's client span, exported in the request's trace.
      yield* expectDeliverySpan(otlp.spans, header, traceId)

      // Stored on the event and its delivery, in the same trace.
      const events = yield* app.sql`SELECT traceparent FROM domain_events WHERE type = 'incident.created'`.pipe(
        decodeRows(Stored)
      )
      expect(events.map((row) => row.traceparent?.split("-")[1])).toEqual([traceId])
      const deliveries = yield* app.sql`SELECT traceparent FROM webhook_deliveries`.pipe(decodeRows(Stored))
      expect(deliveries.map((row) => row.traceparent?.split("-")[1])).toEqual([traceId])
    }))

  it.live("tracing off: no traceparent header, and none stored", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver()
      const app = yield* startApp()
      yield* incidentHook(app, receiver.url(), "untraced-event", `00-${traceId}-${parentId}-01`)

      const [delivery] = yield* eventually(
        "the incident.created delivery",
        Effect.sync(() => receiver.on("/hook")),
        (received) => received.length > 0
      )
      expect(delivery.headers["x-service-event"]).toBe("incident.created")
      expect(delivery.headers.traceparent).toBeUndefined()
      const events = yield* app.sql`SELECT traceparent FROM domain_events`.pipe(decodeRows(Stored))
      expect(events.length).toBeGreaterThan(0)
      expect(events.every((row) => row.traceparent === null)).toBe(true)
      const deliveries = yield* app.sql`SELECT traceparent FROM webhook_deliveries`.pipe(decodeRows(Stored))
      expect(deliveries).toEqual([{ traceparent: null }])
    }))
})
