import { Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { Conflict, NotFound } from "../../schemas/Errors.ts"
import { type Delivery, PING_EVENT } from "../../schemas/Webhooks.ts"
import type { DomainEvent } from "../platform/Events.ts"
import { Deliveries } from "./Deliveries.ts"
import { type PayloadOrganization, type PayloadRepository, pingPayload, toWebhookEvent } from "./Payloads.ts"
import { Webhooks, type WebhookScope } from "./Webhooks.ts"

/**
 * Turns events into queued deliveries: a domain event into one delivery per subscribed
 * webhook of its organization (run by the durable `webhooks` consumer, in its transaction),
 * and the API's test pings and redeliveries.
 */
export class FanOut extends Context.Service<FanOut, {
  /** Queues the event's deliveries in the caller's transaction (the consumer's). */
  handle(event: DomainEvent): Effect.Effect<number, SqlError>
  /** `POST …/test`: a `ping` delivery, whatever the subscription; `repository` for a repository's webhook. */
  ping(
    scope: WebhookScope,
    webhookId: string,
    repository?: PayloadRepository
  ): Effect.Effect<Delivery, NotFound | Conflict>
  /** `POST …/deliveries/{id}/redeliver`: a new delivery of the same payload, `redelivery: true`. */
  redeliver(scope: WebhookScope, webhookId: string, deliveryId: string): Effect.Effect<Delivery, NotFound | Conflict>
}>()("canopy/webhooks/FanOut") {
  static readonly layer = Layer.effect(
    FanOut,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const webhooks = yield* Webhooks
      const deliveries = yield* Deliveries
      // Slugs never change: cache them per runner.
      const slugs = new Map<string, string>()
      const organization = (orgId: string) =>
        Effect.gen(function*() {
          const cached = slugs.get(orgId)
          if (cached !== undefined) return { id: orgId, slug: cached } satisfies PayloadOrganization
          const rows = yield* sql<{ slug: string }>`SELECT slug FROM organizations WHERE id = ${orgId}`
          const slug = rows[0]?.slug ?? orgId
          slugs.set(orgId, slug)
          return { id: orgId, slug } satisfies PayloadOrganization
        })

      const handle = Effect.fnUntraced(function*(event: DomainEvent) {
        const mapped = toWebhookEvent(event)
        if (Option.isNone(mapped) || event.orgId === null) return 0
        const { event: name, payload, repoId } = mapped.value
        const body = JSON.stringify(payload(yield* organization(event.orgId)))
        const now = yield* Clock.currentTimeMillis
        return yield* deliveries.enqueueForSubscribers({ orgId: event.orgId, repoId }, name, body, now)
      })

      const queueOne = (webhookId: string, event: string, payload: string, redelivery: boolean) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const [delivery] = yield* deliveries.enqueue([{ webhookId, event, payload, redelivery }], now).pipe(
            Effect.orDie
          )
          return delivery
        })

      const ping = Effect.fn("FanOut.ping")(function*(
        scope: WebhookScope,
        webhookId: string,
        repository?: PayloadRepository
      ) {
        yield* webhooks.requireActive(scope, webhookId)
        const now = yield* Clock.currentTimeMillis
        const org = yield* organization(scope.orgId).pipe(Effect.orDie)
        const payload = pingPayload(webhookId, org, repository ?? null, new Date(now).toISOString())
        return yield* queueOne(webhookId, PING_EVENT, JSON.stringify(payload), false)
      })

      const redeliver = Effect.fn("FanOut.redeliver")(
        function*(scope: WebhookScope, webhookId: string, deliveryId: string) {
          yield* webhooks.requireActive(scope, webhookId)
          const original = yield* deliveries.payloadOf(webhookId, deliveryId)
          return yield* queueOne(webhookId, original.event, original.payload, true)
        }
      )

      return FanOut.of({ handle, ping, redeliver })
    })
  )
}
