import { describe, expect, it } from "@effect/vitest"
import { type Context, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { MonitorStatusEvent } from "../../schemas/monitors/Monitors.ts"
import { type DomainEvent, publish } from "../../services/events/Events.ts"
import { FanOut } from "../../services/webhooks/FanOut.ts"
import { bootstrapOrg, request, startApp } from "../support/app.ts"

const monitorDown = (orgId: string) =>
  MonitorStatusEvent.make(orgId, {
    monitorId: "mon_lagging",
    name: "Homepage",
    status: "down",
    previousStatus: "up",
    timestamp: new Date().toISOString()
  })

/**
 * A webhook receives only the events that happened after it was created (as on GitHub), even
 * when the fan-out consumer lags behind and reaches an older event only after the webhook
 * exists. The lag is reproduced by handing the fan-out an event read back from the outbox
 * after the webhook's creation, as a consumer behind by that much would.
 */
describe("webhook fan-out and events older than the webhook", () => {
  it.live("an event from before a webhook's creation is not delivered to it; one from after is", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const { key, org } = yield* bootstrapOrg(app.baseUrl, { slug: "lagging" })
      const orgId = (org as { id: string }).id
      const fanOut = yield* Effect.provide(Effect.service(FanOut), app.context as Context.Context<FanOut>)
      const stored = (from: number) =>
        app.sql<{ id: string; type: string; org_id: string; data: unknown; created_at: Date }>`
          SELECT id::text, type, org_id, data, created_at FROM domain_events
          WHERE org_id = ${orgId} AND id > ${from} ORDER BY id`.pipe(
          Effect.map((rows) =>
            rows.map((row): DomainEvent => ({
              id: Number(row.id),
              type: row.type,
              orgId: row.org_id,
              data: row.data,
              createdAt: row.created_at
            }))
          )
        )
      const publishDown = publish(monitorDown(orgId)).pipe(Effect.provideService(SqlClient.SqlClient, app.sql))

      // The event happens, and only then is the webhook created.
      yield* publishDown
      const [old] = yield* stored(0)
      const created = yield* request(`${app.baseUrl}/api/v1/webhooks`, {
        method: "POST",
        token: key,
        body: { url: "http://127.0.0.1:9/hook", events: ["monitor.down"] }
      })
      expect(created.status).toBe(201)
      const webhookId = created.body.id as string

      // A consumer that lags reaches the older event now: nothing for the new webhook.
      expect(yield* fanOut.handleAll([old])).toBe(0)
      // An event after the creation reaches it.
      yield* publishDown
      const fresh = (yield* stored(old.id)).at(-1)!
      expect(fresh.createdAt.getTime()).toBeGreaterThanOrEqual(old.createdAt.getTime())
      expect(yield* fanOut.handleAll([fresh])).toBe(1)
      const deliveries = yield* app.sql<{ n: number }>`
        SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = ${webhookId}`
      // The app's own consumer delivered `fresh` once too; `old` never.
      expect(deliveries[0].n).toBeLessThanOrEqual(2)
      expect(deliveries[0].n).toBeGreaterThanOrEqual(1)
    }).pipe(Effect.scoped))
})
