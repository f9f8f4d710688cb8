import { Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { type Conflict, NotFound } from "../../schemas/platform/Errors.ts"
import { type Delivery, PING_EVENT } from "../../schemas/webhooks/Webhooks.ts"
import type { DomainEvent } from "../events/Events.ts"
import { currentTraceparent } from "../platform/ClientSpans.ts"
import { organizationSlugs } from "../tenancy/Tenancy.ts"
import { Deliveries } from "./Deliveries.ts"
import { type PayloadOrganization, type PayloadRepository, pingPayload, toWebhookEvent } from "./Payloads.ts"
import { Webhooks, type WebhookScope } from "./Webhooks.ts"

/**
 * Turns events into queued deliveries: a domain event into one delivery per subscribed
 * webhook of its organization (run by the durable `webhooks` consumer, in its transaction),
 * and the API's test pings and redeliveries.
 */
export class FanOut extends Context.Service<FanOut, {
  /** Queues the events' deliveries, in event order, in the caller's transaction (the consumer's). */
  handleAll(events: ReadonlyArray<DomainEvent>): Effect.Effect<number, SqlError>
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
      const loadSlugs = Effect.fnUntraced(function*(orgIds: ReadonlyArray<string>) {
        const missing = [...new Set(orgIds)].filter((id) => !slugs.has(id))
        if (missing.length === 0) return
        const rows = yield* organizationSlugs(sql, missing)
        for (const row of rows) slugs.set(row.id, row.slug)
        for (const id of missing) if (!slugs.has(id)) slugs.set(id, id)
      })
      const organization = (orgId: string) =>
        Effect.map(loadSlugs([orgId]), (): PayloadOrganization => ({ id: orgId, slug: slugs.get(orgId) ?? orgId }))

      const handleAll = Effect.fnUntraced(function*(events: ReadonlyArray<DomainEvent>) {
        const mapped = events.flatMap((event) => {
          const webhookEvent = toWebhookEvent(event)
          return Option.isNone(webhookEvent) || event.orgId === null
            ? []
            : [{
              orgId: event.orgId,
              happenedAt: event.createdAt,
              traceparent: event.traceparent ?? null,
              ...webhookEvent.value
            }]
        })
        yield* loadSlugs(mapped.map((event) => event.orgId))
        const subscribed = mapped.map(({ event, happenedAt, orgId, payload, repoId, traceparent }) => ({
          orgId,
          repoId,
          event,
          happenedAt,
          traceparent,
          payload: JSON.stringify(payload({ id: orgId, slug: slugs.get(orgId) ?? orgId }))
        }))
        return yield* deliveries.enqueueForEvents(subscribed, yield* Clock.currentTimeMillis)
      })

      const queueOne = (webhookId: string, event: string, payload: string, redelivery: boolean) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          // Its request continues the trace of the API request that queued it.
          const traceparent = yield* currentTraceparent
          const queued = yield* deliveries.enqueue([{ webhookId, event, payload, redelivery, traceparent }], now).pipe(
            Effect.orDie
          )
          // Deleted since it was checked: nothing was queued.
          if (queued.length === 0) return yield* new NotFound({ message: `Webhook '${webhookId}' not found` })
          return queued[0]
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

      return FanOut.of({ handleAll, ping, redeliver })
    })
  )
}
