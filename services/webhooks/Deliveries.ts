import { PgTypes } from "@effect/sql-pg"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { NotFound } from "../../schemas/Errors.ts"
import type { Delivery, DeliveryAttempt, DeliveryDetail, DeliveryList, DeliveryStatus } from "../../schemas/Webhooks.ts"
import { makeId } from "../platform/Ids.ts"
import { pgArray } from "../platform/PgArrayParam.ts"
import {
  type AttemptRecord,
  attemptRows,
  type ClaimedDelivery,
  LOG_ATTEMPTS,
  QUEUE_AFTER_ATTEMPTS,
  type QueuedDelivery,
  type QueuedRow,
  RECORD_SET
} from "./DeliveryClaims.ts"

/** The channel that wakes the runner hosting a webhook when deliveries are queued (payload: its id). */
export const WEBHOOKS_CHANNEL = "canopy_webhooks"

export type { AttemptRecord, ClaimedDelivery, QueuedDelivery } from "./DeliveryClaims.ts"

export interface NewDelivery {
  readonly webhookId: string
  readonly event: string
  /** The payload's JSON text. */
  readonly payload: string
  readonly redelivery: boolean
}

/** An event for the webhooks of one scope (`repoId` null: the organization's webhooks). */
export interface SubscribedEvent {
  readonly orgId: string
  readonly repoId: string | null
  readonly event: string
  /** The payload's JSON text. */
  readonly payload: string
}

interface DeliveryRow {
  readonly seq: number | string
  readonly id: string
  readonly event: string
  readonly status: DeliveryStatus
  readonly attempts: number
  readonly response_code: number | null
  readonly duration_ms: number | null
  readonly delivered_at: Date | null
  readonly redelivery: boolean
  readonly created_at: Date
  readonly next_attempt_at: Date
}

const firstQueued = (rows: ReadonlyArray<QueuedRow>): Option.Option<QueuedDelivery> =>
  rows.length === 0 ? Option.none() : Option.some({
    seq: Number(rows[0].seq),
    id: rows[0].id,
    event: rows[0].event,
    payload: rows[0].payload,
    attempts: rows[0].attempts,
    dueAt: Math.round(Number(rows[0].due_at))
  })

interface AttemptRow {
  readonly attempt: number
  readonly started_at: Date
  readonly duration_ms: number
  readonly request_headers: Record<string, string>
  readonly request_body: string | null
  readonly response_code: number | null
  readonly response_headers: Record<string, string> | null
  readonly response_body: string | null
  readonly error: string | null
}

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
 * The delivery queue and log of every webhook (tables `webhook_deliveries`,
 * `webhook_attempts`). A pending delivery is queued work; `next_attempt_at` is its durable
 * timer. `webhook_queue` holds a copy of `(webhook_id, next_attempt_at, seq)` of every pending
 * delivery, written in the same statements, and is what claims scan (migration 0019). Only
 * the webhook's entity claims and records attempts (see `Dispatcher`).
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
        const iso = new Date(at).toISOString()
        const rows = deliveries.map((delivery) => ({ ...delivery, id: makeId("delivery") }))
        const inserted = yield* sql<DeliveryRow>`
          WITH inserted AS (
            INSERT INTO webhook_deliveries (id, webhook_id, event, payload, redelivery, next_attempt_at, created_at)
            SELECT r.id, r."webhookId", r.event, r.payload, r.redelivery, ${iso}::timestamptz, ${iso}::timestamptz
            FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
              AS r(id text, "webhookId" text, event text, payload text, redelivery boolean)
            -- No foreign key (0019): the lock keeps a concurrent delete of the webhook behind this commit.
            JOIN webhooks w ON w.id = r."webhookId"
            FOR KEY SHARE OF w
            RETURNING *
          ), queue AS (
            INSERT INTO webhook_queue (webhook_id, next_attempt_at, seq)
            SELECT webhook_id, next_attempt_at, seq FROM inserted
          )
          SELECT * FROM inserted`
        const webhookIds = [...new Set(deliveries.map((delivery) => delivery.webhookId))]
        yield* sql`
          SELECT pg_notify(${WEBHOOKS_CHANNEL}, id)
          FROM jsonb_array_elements_text(${JSON.stringify(webhookIds)}::jsonb) AS id`
        return inserted.map(toDelivery)
      })

      const enqueueForEvents = Effect.fnUntraced(function*(events: ReadonlyArray<SubscribedEvent>, at: number) {
        if (events.length === 0) return 0
        const iso = new Date(at).toISOString()
        const scopes = events.map(({ event, orgId, repoId }, n) => ({ n, orgId, repoId, event }))
        const matches = yield* sql<{ n: number; webhookId: string }>`
          WITH e AS (
            SELECT * FROM jsonb_to_recordset(${JSON.stringify(scopes)}::jsonb)
              AS e(n integer, "orgId" text, "repoId" text, event text)
          ), w AS (
            -- Deliveries have no foreign key (0019): a webhook deleted meanwhile waits for this
            -- transaction, then its delete removes what it queued. One lock per webhook and batch.
            SELECT id, org_id, repo_id, events, created_at FROM webhooks
            WHERE org_id IN (SELECT "orgId" FROM e) AND is_active
            FOR KEY SHARE
          )
          SELECT e.n, w.id AS "webhookId"
          FROM e JOIN w ON w.org_id = e."orgId" AND w.repo_id IS NOT DISTINCT FROM e."repoId"
            AND w.events && ARRAY[e.event, '*']::text[]
          ORDER BY e.n, w.created_at, w.id`
        if (matches.length === 0) return 0
        // Each payload travels once, however many webhooks get it; rows go in in queue order.
        // Typed arrays, not a JSON document: the payloads (JSON text) are not escaped and parsed again.
        const ids = matches.map(() => makeId("delivery"))
        const used = [...new Set(matches.map((match) => match.n))]
        const { OID } = PgTypes
        yield* sql`
          WITH queued AS (
            INSERT INTO webhook_deliveries (id, webhook_id, event, payload, next_attempt_at, created_at)
            SELECT r.id, r.w, p.event, p.payload, ${iso}::timestamptz, ${iso}::timestamptz
            FROM unnest(${pgArray(ids, OID.text)}::text[],
              ${pgArray(matches.map((match) => match.webhookId), OID.text)}::text[],
              ${pgArray(matches.map((match) => match.n), OID.int4)}::int4[]) WITH ORDINALITY AS r(id, w, n, k)
            JOIN unnest(${pgArray(used, OID.int4)}::int4[],
              ${pgArray(used.map((n) => events[n].event), OID.text)}::text[],
              ${pgArray(used.map((n) => events[n].payload), OID.text)}::text[]) AS p(n, event, payload)
              ON p.n = r.n
            ORDER BY r.k
            RETURNING webhook_id, next_attempt_at, seq
          ), queue AS (
            INSERT INTO webhook_queue (webhook_id, next_attempt_at, seq)
            SELECT webhook_id, next_attempt_at, seq FROM queued
          )
          SELECT pg_notify(${WEBHOOKS_CHANNEL}, webhook_id) FROM (SELECT DISTINCT webhook_id FROM queued) AS woken`
        return matches.length
      })

      const release = (claims: ReadonlyArray<ClaimedDelivery>) => {
        if (claims.length === 0) return Effect.void
        const rows = claims.map((claim) => ({
          seq: claim.seq,
          attempts: claim.attempts,
          claimed: claim.wasClaimedAt === null ? null : new Date(claim.wasClaimedAt).toISOString()
        }))
        return Effect.orDie(sql`
          UPDATE webhook_deliveries d SET attempts = d.attempts - 1, claimed_at = r.claimed
          FROM jsonb_to_recordset(${
          JSON.stringify(rows)
        }::jsonb) AS r(seq bigint, attempts integer, claimed timestamptz)
          WHERE d.seq = r.seq AND d.attempts = r.attempts AND d.status = 'pending'`)
      }

      const head = (webhookId: string, now: number, delays: ReadonlyArray<number>) => {
        const at = new Date(now).toISOString()
        const jsonDelays = JSON.stringify(delays)
        // Rows due by their place in the queue are few when nothing is claimable (claims in
        // flight or left by a dead runner, exhausted ones): their real time is computed;
        // beyond them the index gives the next one.
        return sql<QueuedRow>`
          SELECT * FROM (
            (SELECT seq, id, event, payload, attempts, extract(epoch FROM CASE WHEN claimed_at IS NULL
                THEN next_attempt_at
                ELSE claimed_at + make_interval(secs => (${jsonDelays}::jsonb->>(attempts - 1))::float8 / 1000)
              END) * 1000 AS due_at
            FROM webhook_deliveries
            WHERE status = 'pending' AND seq IN (
              SELECT seq FROM webhook_queue WHERE webhook_id = ${webhookId} AND next_attempt_at <= ${at}::timestamptz))
            UNION ALL
            (SELECT w.seq, w.id, w.event, w.payload, w.attempts, extract(epoch FROM q.next_attempt_at) * 1000 AS due_at
            FROM webhook_queue q JOIN webhook_deliveries w ON w.seq = q.seq AND w.status = 'pending'
            WHERE q.webhook_id = ${webhookId} AND q.next_attempt_at > ${at}::timestamptz
            ORDER BY q.next_attempt_at, q.seq LIMIT 1)
          ) AS h ORDER BY due_at, seq LIMIT 1`.pipe(Effect.orDie, Effect.map(firstQueued))
      }

      const recordAll = (attempts: ReadonlyArray<AttemptRecord>) => {
        if (attempts.length === 0) return Effect.void
        return Effect.orDie(sql`
          WITH r AS (${attemptRows(sql, attempts)}), logged AS (
            ${sql.literal(LOG_ATTEMPTS)}
          ), ${sql.literal(QUEUE_AFTER_ATTEMPTS)}
          UPDATE webhook_deliveries d SET ${sql.literal(RECORD_SET)}
          FROM r WHERE d.seq = r.seq AND d.attempts = r.attempt`)
      }

      const fail = (seq: number) =>
        Effect.orDie(sql`
          WITH failed AS (
            UPDATE webhook_deliveries SET status = 'failed' WHERE seq = ${seq} AND status = 'pending'
            RETURNING webhook_id, next_attempt_at, seq
          )
          DELETE FROM webhook_queue q USING failed f
          WHERE q.webhook_id = f.webhook_id AND q.next_attempt_at = f.next_attempt_at AND q.seq = f.seq`)

      const failPending = (webhookId: string) =>
        Effect.orDie(sql`
          WITH failed AS (
            UPDATE webhook_deliveries SET status = 'failed' WHERE webhook_id = ${webhookId} AND status = 'pending'
            RETURNING seq
          )
          DELETE FROM webhook_queue WHERE webhook_id = ${webhookId} AND seq IN (SELECT seq FROM failed)`)

      const pendingWebhooks = () =>
        sql<{ webhook_id: string; due_at: string | number }>`
          SELECT webhook_id, extract(epoch FROM min(next_attempt_at)) * 1000 AS due_at
          FROM webhook_queue GROUP BY webhook_id`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.map((row) => ({ webhookId: row.webhook_id, dueAt: Number(row.due_at) })))
        )

      const list = Effect.fn("Deliveries.list")(function*(webhookId: string, options?: ListDeliveriesOptions) {
        const limit = options?.limit ?? 50
        const offset = options?.offset ?? 0
        const filter = options?.status === undefined ? sql.literal("") : sql`AND status = ${options.status}`
        const [rows, counted] = yield* Effect.all([
          sql<DeliveryRow>`
            SELECT * FROM webhook_deliveries WHERE webhook_id = ${webhookId} ${filter}
            ORDER BY seq DESC LIMIT ${limit} OFFSET ${offset}`,
          sql<{ total: string | number }>`
            SELECT count(*) AS total FROM webhook_deliveries WHERE webhook_id = ${webhookId} ${filter}`
        ], { concurrency: 2 }).pipe(Effect.orDie)
        return { deliveries: rows.map(toDelivery), count: Number(counted[0].total) }
      })

      const findRow = (webhookId: string, deliveryId: string) =>
        sql<DeliveryRow & { payload: string }>`
          SELECT * FROM webhook_deliveries WHERE id = ${deliveryId} AND webhook_id = ${webhookId}`.pipe(
          Effect.orDie,
          Effect.flatMap((rows) => rows.length === 0 ? Effect.fail(notFound(deliveryId)) : Effect.succeed(rows[0]))
        )

      const get = Effect.fn("Deliveries.get")(function*(webhookId: string, deliveryId: string) {
        const row = yield* findRow(webhookId, deliveryId)
        const attempts = yield* sql<AttemptRow>`
          SELECT * FROM webhook_attempts WHERE delivery_seq = ${row.seq} ORDER BY attempt`.pipe(Effect.orDie)
        return { ...toDelivery(row), payload: parseJson(row.payload), attempts: attempts.map(toAttempt(row.payload)) }
      })

      const payloadOf = (webhookId: string, deliveryId: string) =>
        Effect.map(findRow(webhookId, deliveryId), (row) => ({ event: row.event, payload: row.payload }))

      const prune = Effect.fn("Deliveries.prune")(
        function*(retentionDays: Readonly<Record<string, number>>, now: number) {
          const plans = Object.entries(retentionDays).map(([plan, days]) => ({ plan, days }))
          const rows = yield* sql<{ deleted: string | number }>`
          WITH doomed AS (
            DELETE FROM webhook_deliveries d USING webhooks w, organizations o,
              jsonb_to_recordset(${JSON.stringify(plans)}::jsonb) AS r(plan text, days integer)
            WHERE w.id = d.webhook_id AND o.id = w.org_id AND r.plan = o.plan
              AND d.status <> 'pending'
              AND d.created_at < ${new Date(now).toISOString()}::timestamptz - make_interval(days => r.days)
            RETURNING 1
          ) SELECT count(*) AS deleted FROM doomed`.pipe(Effect.orDie)
          return Number(rows[0].deleted)
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
