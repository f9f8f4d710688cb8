import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { MonitorStatusEvent } from "../../schemas/monitors/Monitors.ts"
import { publish } from "../../services/events/Events.ts"
import { verifyHubSignature } from "../../services/webhooks/Signature.ts"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { startReceiver } from "./receiver.ts"

const monitorStatus = (orgId: string, status: "up" | "down" | "degraded", previousStatus: "up" | "down" | "pending") =>
  MonitorStatusEvent.make(orgId, {
    monitorId: "mon_webhooktest",
    name: "Homepage",
    status,
    previousStatus,
    timestamp: new Date().toISOString()
  })

describe("organization webhooks API", () => {
  it.live("CRUD with validation, a write-only secret, per-plan counts and cross-organization 404s", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const { key } = yield* bootstrapOrg(app.baseUrl, { slug: "acme" })
      const other = yield* bootstrapOrg(app.baseUrl, { slug: "other" })
      const api = (path: string, init?: { method?: string; body?: unknown }, token = key) =>
        request(`${app.baseUrl}/api/v1/webhooks${path}`, { ...init, token })

      const created = yield* api("", {
        method: "POST",
        body: { url: "https://hooks.example.com/a", secret: "s3cr3t", events: ["monitor.down", "incident.created"] }
      })
      expect(created.status).toBe(201)
      expect(created.body).toMatchObject({
        url: "https://hooks.example.com/a",
        hasSecret: true,
        contentType: "application/json",
        events: ["monitor.down", "incident.created"],
        isActive: true,
        maxRetries: 3,
        retryIntervalSeconds: 60,
        deliveryCount: 0,
        failureCount: 0,
        lastDeliveryAt: null
      })
      expect(created.body.id).toMatch(/^webhook_/)
      expect(JSON.stringify(created.body)).not.toContain("s3cr3t")
      const id = created.body.id as string
      // Stored encrypted, not in clear.
      const [stored] = yield* app.sql<{ secret_enc: string }>`SELECT secret_enc FROM webhooks WHERE id = ${id}`
      expect(stored.secret_enc).not.toContain("s3cr3t")

      // Bad input: unknown event, empty events, unknown field, null where not nullable, bounds, scheme.
      for (
        const body of [
          { url: "https://x.example.com", events: ["monitor.exploded"] },
          { url: "https://x.example.com", events: [] },
          { url: "https://x.example.com", events: ["push"] },
          { url: "https://x.example.com", events: ["*"], colour: "red" },
          { url: "https://x.example.com", events: ["*"], maxRetries: null },
          { url: "https://x.example.com", events: ["*"], maxRetries: 11 },
          { url: "https://x.example.com", events: ["*"], retryIntervalSeconds: 5 },
          { url: "https://x.example.com", events: ["*"], contentType: "text/plain" },
          { url: "ftp://x.example.com", events: ["*"] },
          { events: ["*"] }
        ]
      ) {
        const refused = yield* api("", { method: "POST", body })
        expect(refused.status, JSON.stringify(body)).toBe(400)
        expect(refused.body.error).toBe("validation_error")
      }

      const patched = yield* api(`/${id}`, { method: "PATCH", body: { isActive: false, secret: null } })
      expect(patched.status).toBe(200)
      expect(patched.body).toMatchObject({ isActive: false, hasSecret: false })
      expect((yield* api(`/${id}`, { method: "PATCH", body: { events: null } })).status).toBe(400)

      // Free plan: 3 per organization.
      for (const n of [2, 3]) {
        const more = yield* api("", { method: "POST", body: { url: `https://hooks.example.com/${n}`, events: ["*"] } })
        expect(more.status).toBe(201)
      }
      const fourth = yield* api("", { method: "POST", body: { url: "https://hooks.example.com/4", events: ["*"] } })
      expect(fourth.status).toBe(403)
      expect(fourth.body).toMatchObject({ error: "plan_required", requiredPlan: "pro" })
      const listed = yield* api("")
      expect(listed.status).toBe(200)
      expect(listed.body.count).toBe(3)
      expect(listed.body.webhooks[2].id).toBe(id)

      // Another organization sees none of it.
      expect((yield* api("", undefined, other.key)).body.count).toBe(0)
      for (
        const [path, method] of [
          [`/${id}`, "GET"],
          [`/${id}`, "PATCH"],
          [`/${id}`, "DELETE"],
          [`/${id}/test`, "POST"],
          [`/${id}/deliveries`, "GET"],
          [`/${id}/deliveries/delivery_x`, "GET"],
          [`/${id}/deliveries/delivery_x/redeliver`, "POST"]
        ] as const
      ) {
        const response = yield* api(
          path,
          { method, ...(method === "PATCH" ? { body: { isActive: true } } : {}) },
          other.key
        )
        expect(response.status, `${method} ${path}`).toBe(404)
        expect(response.body.error).toBe("not_found")
      }

      expect((yield* api(`/${id}`, { method: "DELETE" })).status).toBe(204)
      expect((yield* api(`/${id}`)).status).toBe(404)
    }))

  it.live("delivers subscribed events signed, skips unsubscribed ones, logs attempts, pings and redelivers", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver()
      const app = yield* startApp()
      const { key, org } = yield* bootstrapOrg(app.baseUrl, { slug: "signed", plan: "pro" })
      const api = (path: string, init?: { method?: string; body?: unknown }) =>
        request(`${app.baseUrl}/api/v1/webhooks${path}`, { ...init, token: key })
      const secret = "It's a Secret to Everybody"
      const down = yield* api("", {
        method: "POST",
        body: { url: receiver.url("/down"), secret, events: ["monitor.down"] }
      })
      const form = yield* api("", {
        method: "POST",
        body: {
          url: receiver.url("/form"),
          secret,
          events: ["monitor.up"],
          contentType: "application/x-www-form-urlencoded"
        }
      })
      expect(down.status).toBe(201)
      expect(form.status).toBe(201)

      const publishEvent = (event: ReturnType<typeof monitorStatus>) =>
        publish(event).pipe(Effect.provideService(SqlClient.SqlClient, app.sql))
      yield* publishEvent(monitorStatus(org.id, "down", "up"))
      yield* publishEvent(monitorStatus(org.id, "degraded", "up")) // nobody subscribed
      yield* publishEvent(monitorStatus(org.id, "up", "down"))

      yield* eventually("both deliveries", Effect.sync(() => receiver.received.length), (n) => n >= 2)
      const [json] = receiver.on("/down")
      expect(json.headers["content-type"]).toBe("application/json")
      expect(json.headers["x-service-event"]).toBe("monitor.down")
      expect(json.headers["user-agent"]).toMatch(/^Canopy-Hookshot\//)
      expect(json.headers["x-service-delivery"]).toMatch(/^delivery_/)
      expect(json.headers["webhook-id"]).toBe(json.headers["x-service-delivery"])
      expect(Number(json.headers["webhook-timestamp"])).toBeGreaterThan(1_700_000_000)
      expect(json.headers["webhook-signature"]).toMatch(/^v1,/)
      expect(verifyHubSignature(secret, json.body, String(json.headers["x-service-signature"]))).toBe(true)
      const payload = JSON.parse(json.body.toString())
      expect(payload).toMatchObject({
        event: "monitor.down",
        action: "down",
        organization: { id: org.id, slug: "signed" },
        monitor: { id: "mon_webhooktest", name: "Homepage", status: "down", previousStatus: "up" }
      })

      const [encoded] = receiver.on("/form")
      expect(encoded.headers["content-type"]).toBe("application/x-www-form-urlencoded")
      expect(verifyHubSignature(secret, encoded.body, String(encoded.headers["x-service-signature"]))).toBe(true)
      const formPayload = JSON.parse(new URLSearchParams(encoded.body.toString()).get("payload")!)
      expect(formPayload).toMatchObject({ event: "monitor.up", monitor: { status: "up", previousStatus: "down" } })

      // The log: the delivery with its attempt, and the list entry's counts.
      const log = yield* eventually(
        "a successful delivery in the log",
        api(`/${down.body.id}/deliveries`),
        (response) => response.body.deliveries?.[0]?.status === "success",
        { pollMs: 250 }
      )
      expect(log.body.count).toBe(1)
      const delivery = log.body.deliveries[0]
      expect(delivery).toMatchObject({ event: "monitor.down", responseCode: 200, attempt: 1, redelivery: false })
      expect(delivery.id).toBe(json.headers["x-service-delivery"])
      const detail = yield* api(`/${down.body.id}/deliveries/${delivery.id}`)
      expect(detail.status).toBe(200)
      expect(detail.body.payload).toEqual(payload)
      expect(detail.body.attempts).toHaveLength(1)
      expect(detail.body.attempts[0]).toMatchObject({
        attempt: 1,
        request: { body: json.body.toString() },
        response: { statusCode: 200, body: "thanks" },
        error: null
      })
      expect(detail.body.attempts[0].request.headers["X-Service-Signature"]).toBe(json.headers["x-service-signature"])
      // A JSON attempt's body is logged as the payload itself; a form-encoded one as sent.
      const formLog = yield* eventually(
        "the form delivery in the log",
        api(`/${form.body.id}/deliveries`),
        (response) => response.body.deliveries?.[0]?.status === "success",
        { pollMs: 250 }
      )
      const formDetail = yield* api(`/${form.body.id}/deliveries/${formLog.body.deliveries[0].id}`)
      expect(formDetail.body.attempts[0].request.body).toBe(encoded.body.toString())
      const entry = (yield* api("")).body.webhooks.find((hook: any) => hook.id === down.body.id)
      expect(entry).toMatchObject({ deliveryCount: 1, failureCount: 0 })
      expect(entry.lastDeliveryAt).toBe(delivery.deliveredAt)

      // Redeliver: a new delivery, the same bytes, marked as a redelivery.
      const redelivered = yield* api(`/${down.body.id}/deliveries/${delivery.id}/redeliver`, { method: "POST" })
      expect(redelivered.status).toBe(202)
      expect(redelivered.body.delivery).toMatchObject({ event: "monitor.down", redelivery: true, status: "pending" })
      yield* eventually("the redelivery", Effect.sync(() => receiver.on("/down").length), (n) => n === 2)
      const second = receiver.on("/down")[1]
      expect(second.body.equals(json.body)).toBe(true)
      expect(second.headers["x-service-delivery"]).toBe(redelivered.body.delivery.id)

      // Ping, whatever the subscription.
      const ping = yield* api(`/${form.body.id}/test`, { method: "POST" })
      expect(ping.status).toBe(202)
      yield* eventually("the ping", Effect.sync(() => receiver.on("/form").length), (n) => n === 2)
      const pinged = receiver.on("/form")[1]
      expect(pinged.headers["x-service-event"]).toBe("ping")
      const pingPayload = JSON.parse(new URLSearchParams(pinged.body.toString()).get("payload")!)
      expect(pingPayload).toMatchObject({ event: "ping", hookId: form.body.id })
      expect(typeof pingPayload.zen).toBe("string")

      // Nothing else arrived: the degraded event had no subscriber.
      expect(receiver.received.map((request) => request.headers["x-service-event"]).sort()).toEqual([
        "monitor.down",
        "monitor.down",
        "monitor.up",
        "ping"
      ])
    }))
})
