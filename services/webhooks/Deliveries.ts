import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { NotFound } from "../../schemas/platform/Errors.ts"
import type {
  Delivery,
  DeliveryAttempt,
  DeliveryDetail,
  DeliveryList,
  DeliveryStatus
} from "../../schemas/webhooks/Webhooks.ts"
import { makeId } from "../platform/Ids.ts"
import { countAttempts } from "./AttemptMetrics.ts"
import {
  type AttemptRow,
  attemptsOf,
  deliveryPage,
  type DeliveryRow,
  findDelivery,
  insertDeliveries,
  insertMatched,
  type NewDelivery,
  notifyWebhooks,
  pruneDeliveries,
  type SubscribedEvent,
  subscribedWebhooks
} from "./DeliveryRows.ts"
import {
  type AttemptRecord,
  type ClaimedDelivery,
  failDelivery,
  failPendingOf,
  logAttempts,
  type QueuedDelivery,
  queueHead,
  releaseClaims,
  toQueued,
  webhooksWithPending
} from "./QueueRows.ts"

export type { NewDelivery, SubscribedEvent } from "./DeliveryRows.ts"
export { WEBHOOKS_CHANNEL } from "./DeliveryRows.ts"
export type { AttemptRecord, ClaimedDelivery, QueuedDelivery } from "./QueueRows.ts"

const toDelivery = (row: DeliveryRow): Delivery => ({
  id: row.id,
  event: row.event,
  status: row.status,
  responseCode: row.response_code,
  durationMs: row.duration_ms,
  attempt: row.attempts,
  deliveredAt: row.delivered_at?.toISOString() ?? null,
  redelivery: row.redelivery,
  createdAt: row.created_at.toISOString(),
  nextAttemptAt: row.status === "pending" ? row.next_attempt_at.toISOString() : null
})

const toAttempt = (payload: string) => (row: AttemptRow): DeliveryAttempt => ({
  attempt: row.attempt,
  startedAt: row.started_at.toISOString(),
  durationMs: row.duration_ms,
  request: { headers: row.request_headers, body: row.request_body ?? payload },
  response: row.response_code === null
    ? null
    : { statusCode: row.response_code, headers: row.response_headers ?? {}, body: row.response_body ?? "" },
  error: row.error
})

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

export interface ListDeliveriesOptions {
  readonly status?: DeliveryStatus | undefined
  readonly limit?: number | undefined
  readonly offset?: number | undefined
}

/**
 * The delivery queue and log of every webhook (tables `webhook_deliveries`, `webhook_queue`,
 * `webhook_attempts`; their statements are in `DeliveryRows.ts` and `QueueRows.ts`). Only the webhook's
 * entity claims and records attempts (see `Dispatcher`).
 */
export class Deliveries extends Context.Service<Deliveries, {
  /**
   * Queues deliveries due at `at` (ms) and wakes their webhooks' runners after commit
   * (NOTIFY is transactional). Joins the caller's transaction.
   */
  enqueue(deliveries: ReadonlyArray<NewDelivery>, at: number): Effect.Effect<ReadonlyArray<Delivery>, SqlError>
  /**
   * Queues one delivery of each event for every active webhook of its scope subscribed to it
   * (or to `*`), in event order and then the webhooks' creation order, and wakes their
   * runners after commit; how many. Joins the caller's transaction (the fan-out consumer's).
   * The hot path: two statements for a whole batch of events.
   */
  enqueueForEvents(events: ReadonlyArray<SubscribedEvent>, at: number): Effect.Effect<number, SqlError>
  /** The next delivery to attempt: the earliest due at or after `now` (claims count at their retry time). */
  head(webhookId: string, now: number, delays: ReadonlyArray<number>): Effect.Effect<Option.Option<QueuedDelivery>>
  /**
   * Gives back claims whose attempt was never started (the runner is stopping): the attempt
   * count and timer return to what they were, so the delivery goes out next, on schedule.
   */
  release(claims: ReadonlyArray<ClaimedDelivery>): Effect.Effect<void>
  /** Logs attempts and sets their deliveries' status, in one statement. */
  recordAll(attempts: ReadonlyArray<AttemptRecord>): Effect.Effect<void>
  /** Ends a delivery without another attempt (attempts exhausted while a runner died). */
  fail(seq: number): Effect.Effect<void>
  /** Fails every pending delivery of an inactive webhook. */
  failPending(webhookId: string): Effect.Effect<void>
  /** Webhooks with pending deliveries and their earliest due time (the sweep). */
  pendingWebhooks(): Effect.Effect<ReadonlyArray<{ readonly webhookId: string; readonly dueAt: number }>>
  list(webhookId: string, options?: ListDeliveriesOptions): Effect.Effect<DeliveryList>
  get(webhookId: string, deliveryId: string): Effect.Effect<DeliveryDetail, NotFound>
  /** The stored payload of a delivery (redeliver). */
  payloadOf(webhookId: string, deliveryId: string): Effect.Effect<{ event: string; payload: string }, NotFound>
  /** Deletes deliveries older than each organization's retention; returns how many. */
  prune(retentionDays: Readonly<Record<string, number>>, now: number): Effect.Effect<number>
}>()("canopy/webhooks/Deliveries") {
  static readonly layer = Layer.effect(
    Deliveries,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const notFound = (id: string) => new NotFound({ message: `Delivery '${id}' not found` })

      const enqueue = Effect.fnUntraced(function*(deliveries: ReadonlyArray<NewDelivery>, at: number) {
        if (deliveries.length === 0) return []
        const rows = deliveries.map((delivery) => ({ ...delivery, id: makeId("delivery") }))
        const inserted = yield* insertDeliveries(sql, rows, new Date(at).toISOString())
        yield* notifyWebhooks(sql, [...new Set(deliveries.map((delivery) => delivery.webhookId))])
        return inserted.map(toDelivery)
      })

      const enqueueForEvents = Effect.fnUntraced(function*(events: ReadonlyArray<SubscribedEvent>, at: number) {
        if (events.length === 0) return 0
        const matches = yield* subscribedWebhooks(sql, events)
        if (matches.length === 0) return 0
        yield* insertMatched(sql, events, matches, new Date(at).toISOString())
        return matches.length
      })

      const release = (claims: ReadonlyArray<ClaimedDelivery>) =>
        claims.length === 0 ? Effect.void : Effect.orDie(releaseClaims(sql, claims))

      const head = (webhookId: string, now: number, delays: ReadonlyArray<number>) =>
        queueHead(sql, webhookId, now, delays).pipe(
          Effect.orDie,
          Effect.map((rows) => rows.length === 0 ? Option.none() : Option.some(toQueued(rows[0])))
        )

      const recordAll = (attempts: ReadonlyArray<AttemptRecord>) =>
        attempts.length === 0
          ? Effect.void
          : Effect.andThen(Effect.orDie(logAttempts(sql, attempts)), countAttempts(attempts))

      const fail = (seq: number) => Effect.orDie(failDelivery(sql, seq))

      const failPending = (webhookId: string) => Effect.orDie(failPendingOf(sql, webhookId))

      const pendingWebhooks = () =>
        webhooksWithPending(sql).pipe(
          Effect.orDie,
          Effect.map((rows) => rows.map((row) => ({ webhookId: row.webhook_id, dueAt: row.due_at })))
        )

      const list = Effect.fn("Deliveries.list")(function*(webhookId: string, options?: ListDeliveriesOptions) {
        const [rows, counted] = yield* deliveryPage(sql, webhookId, {
          status: options?.status,
          limit: options?.limit ?? 50,
          offset: options?.offset ?? 0
        }).pipe(Effect.orDie)
        return { deliveries: rows.map(toDelivery), count: counted[0].total }
      })

      const findRow = (webhookId: string, deliveryId: string) =>
        findDelivery(sql, webhookId, deliveryId).pipe(
          Effect.orDie,
          Effect.flatMap((rows) => rows.length === 0 ? Effect.fail(notFound(deliveryId)) : Effect.succeed(rows[0]))
        )

      const get = Effect.fn("Deliveries.get")(function*(webhookId: string, deliveryId: string) {
        const row = yield* findRow(webhookId, deliveryId)
        const attempts = yield* attemptsOf(sql, row.seq).pipe(Effect.orDie)
        return { ...toDelivery(row), payload: parseJson(row.payload), attempts: attempts.map(toAttempt(row.payload)) }
      })

      const payloadOf = (webhookId: string, deliveryId: string) =>
        Effect.map(findRow(webhookId, deliveryId), (row) => ({ event: row.event, payload: row.payload }))

      const prune = Effect.fn("Deliveries.prune")(
        function*(retentionDays: Readonly<Record<string, number>>, now: number) {
          return yield* pruneDeliveries(sql, retentionDays, now).pipe(Effect.orDie)
        }
      )

      return Deliveries.of({
        enqueue,
        enqueueForEvents,
        head,
        release,
        recordAll,
        fail,
        failPending,
        pendingWebhooks,
        list,
        get,
        payloadOf,
        prune
      })
    })
  )
}
