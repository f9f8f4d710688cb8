import { PgTypes } from "@effect/sql-pg"
import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { DeliveryStatus } from "../../schemas/webhooks/Webhooks.ts"
import { makeId } from "../platform/Ids.ts"
import { pgArray as column } from "../platform/PgArrayParam.ts"
import { decodeRows, Int8 } from "../platform/Rows.ts"
import { organizationPlanExpression } from "../tenancy/Tenancy.ts"

/*
 * The `webhook_deliveries` log and its `webhook_attempts`: their rows (Schemas, column types
 * as the driver gives them: `int8` as a `bigint`, `timestamptz` as a `Date`, `jsonb` parsed)
 * and the statements that queue deliveries and read the log (the tables' one owner). Claims,
 * retries and the attempts' writes are in `QueueRows.ts`. Each statement takes the caller's
 * `SqlClient`, so it runs on the caller's connection.
 */

const Headers = Schema.Record(Schema.String, Schema.String)

/** A delivery as the log shows it (`SELECT *`, `RETURNING *`). */
export const DeliveryRow = Schema.Struct({
  seq: Int8,
  id: Schema.String,
  event: Schema.String,
  /** The payload's exact JSON text. */
  payload: Schema.String,
  status: DeliveryStatus,
  attempts: Schema.Int,
  response_code: Schema.NullOr(Schema.Int),
  duration_ms: Schema.NullOr(Schema.Int),
  delivered_at: Schema.NullOr(Schema.Date),
  redelivery: Schema.Boolean,
  created_at: Schema.Date,
  next_attempt_at: Schema.Date
})
export type DeliveryRow = typeof DeliveryRow.Type

/** A logged attempt (`request_body` null: it was the delivery's payload). */
export const AttemptRow = Schema.Struct({
  attempt: Schema.Int,
  started_at: Schema.Date,
  duration_ms: Schema.Int,
  request_headers: Headers,
  request_body: Schema.NullOr(Schema.String),
  response_code: Schema.NullOr(Schema.Int),
  response_headers: Schema.NullOr(Headers),
  response_body: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String)
})
export type AttemptRow = typeof AttemptRow.Type

/** Event `n` of a fan-out and a webhook subscribed to it. */
export const MatchRow = Schema.Struct({ n: Schema.Int, webhookId: Schema.String })

export const TotalRow = Schema.Struct({ total: Int8 })
export const DeletedRow = Schema.Struct({ deleted: Int8 })

export interface NewDelivery {
  readonly webhookId: string
  readonly event: string
  /** The payload's JSON text. */
  readonly payload: string
  readonly redelivery: boolean
  /** The `traceparent` of the span that queued it (null: tracing off): its request continues that trace. */
  readonly traceparent: string | null
}

/** An event for the webhooks of one scope (`repoId` null: the organization's webhooks). */
export interface SubscribedEvent {
  readonly orgId: string
  readonly repoId: string | null
  readonly event: string
  /** The payload's JSON text. */
  readonly payload: string
  /** When the event happened (the outbox's clock): webhooks created later do not get it. */
  readonly happenedAt: Date
  /** The event's `traceparent` (null: tracing was off), carried to its deliveries. */
  readonly traceparent: string | null
}

/** The channel that wakes the runner hosting a webhook when deliveries are queued (payload: its id). */
export const WEBHOOKS_CHANNEL = "canopy_webhooks"

/* Queueing. */

/** Queues deliveries due at `iso`, unless their webhook is gone; the rows queued. */
export const insertDeliveries = (
  sql: SqlClient.SqlClient,
  rows: ReadonlyArray<NewDelivery & { readonly id: string }>,
  iso: string
) =>
  sql`
    WITH inserted AS (
      INSERT INTO webhook_deliveries (id, webhook_id, event, payload, redelivery, traceparent, next_attempt_at,
        created_at)
      SELECT r.id, r."webhookId", r.event, r.payload, r.redelivery, r.traceparent, ${iso}::timestamptz,
        ${iso}::timestamptz
      FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
        AS r(id text, "webhookId" text, event text, payload text, redelivery boolean, traceparent text)
      -- No foreign key (0019): the lock keeps a concurrent delete of the webhook behind this commit.
      JOIN webhooks w ON w.id = r."webhookId"
      FOR KEY SHARE OF w
      RETURNING *
    ), queue AS (
      INSERT INTO webhook_queue (webhook_id, next_attempt_at, seq)
      SELECT webhook_id, next_attempt_at, seq FROM inserted
    )
    SELECT * FROM inserted`.pipe(decodeRows(DeliveryRow))

/** Wakes the runners of `webhookIds` after commit (NOTIFY is transactional). */
export const notifyWebhooks = (sql: SqlClient.SqlClient, webhookIds: ReadonlyArray<string>) =>
  sql`
    SELECT pg_notify(${WEBHOOKS_CHANNEL}, id)
    FROM jsonb_array_elements_text(${JSON.stringify(webhookIds)}::jsonb) AS id`

/**
 * Every active webhook of each event's scope subscribed to it (or to `*`) and existing when
 * the event happened (GitHub's rule; the consumer may reach an event after a webhook was
 * created), in event order and then the webhooks' creation order, locked against a delete
 * until commit.
 */
export const subscribedWebhooks = (sql: SqlClient.SqlClient, events: ReadonlyArray<SubscribedEvent>) => {
  const scopes = events.map(({ event, happenedAt, orgId, repoId }, n) => ({
    n,
    orgId,
    repoId,
    event,
    at: happenedAt.toISOString()
  }))
  return sql`
    WITH e AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(scopes)}::jsonb)
        AS e(n integer, "orgId" text, "repoId" text, event text, at timestamptz)
    ), w AS (
      -- Deliveries have no foreign key (0019): a webhook deleted meanwhile waits for this
      -- transaction, then its delete removes what it queued. One lock per webhook and batch.
      SELECT id, org_id, repo_id, events, created_at, subscribed_from FROM webhooks
      WHERE org_id IN (SELECT "orgId" FROM e) AND is_active
      FOR KEY SHARE
    )
    SELECT e.n, w.id AS "webhookId"
    FROM e JOIN w ON w.org_id = e."orgId" AND w.repo_id IS NOT DISTINCT FROM e."repoId"
      AND w.events && ARRAY[e.event, '*']::text[]
      -- The event's time came through a JS Date (milliseconds): compare at that precision.
      AND date_trunc('milliseconds', w.subscribed_from) <= e.at
    ORDER BY e.n, w.created_at, w.id`.pipe(decodeRows(MatchRow))
}

/**
 * Queues one delivery of event `n` per match, due at `iso`, in the matches' order, and wakes
 * their webhooks' runners after commit.
 */
export const insertMatched = (
  sql: SqlClient.SqlClient,
  events: ReadonlyArray<SubscribedEvent>,
  matches: ReadonlyArray<typeof MatchRow.Type>,
  iso: string
) => {
  // Each payload travels once, however many webhooks get it; rows go in in queue order.
  // Typed arrays, not a JSON document: the payloads (JSON text) are not escaped and parsed again.
  const ids = matches.map(() => makeId("delivery"))
  const used = [...new Set(matches.map((match) => match.n))]
  const { OID } = PgTypes
  return sql`
    WITH queued AS (
      INSERT INTO webhook_deliveries (id, webhook_id, event, payload, traceparent, next_attempt_at, created_at)
      SELECT r.id, r.w, p.event, p.payload, p.traceparent, ${iso}::timestamptz, ${iso}::timestamptz
      FROM unnest(${column(ids, OID.text)}::text[],
        ${column(matches.map((match) => match.webhookId), OID.text)}::text[],
        ${column(matches.map((match) => match.n), OID.int4)}::int4[]) WITH ORDINALITY AS r(id, w, n, k)
      JOIN unnest(${column(used, OID.int4)}::int4[],
        ${column(used.map((n) => events[n].event), OID.text)}::text[],
        ${column(used.map((n) => events[n].payload), OID.text)}::text[],
        ${column(used.map((n) => events[n].traceparent), OID.text)}::text[]) AS p(n, event, payload, traceparent)
        ON p.n = r.n
      ORDER BY r.k
      RETURNING webhook_id, next_attempt_at, seq
    ), queue AS (
      INSERT INTO webhook_queue (webhook_id, next_attempt_at, seq)
      SELECT webhook_id, next_attempt_at, seq FROM queued
    )
    SELECT pg_notify(${WEBHOOKS_CHANNEL}, webhook_id) FROM (SELECT DISTINCT webhook_id FROM queued) AS woken`
}

/* The log. */

/** A page of a webhook's deliveries, newest first, and how many match (two statements at once). */
export const deliveryPage = (
  sql: SqlClient.SqlClient,
  webhookId: string,
  page: { readonly status: DeliveryStatus | undefined; readonly limit: number; readonly offset: number }
) => {
  const filter = page.status === undefined ? sql.literal("") : sql`AND status = ${page.status}`
  return Effect.all([
    sql`
      SELECT * FROM webhook_deliveries WHERE webhook_id = ${webhookId} ${filter}
      ORDER BY seq DESC LIMIT ${page.limit} OFFSET ${page.offset}`.pipe(decodeRows(DeliveryRow)),
    sql`
      SELECT count(*) AS total FROM webhook_deliveries WHERE webhook_id = ${webhookId} ${filter}`.pipe(
      decodeRows(TotalRow)
    )
  ], { concurrency: 2 })
}

/** A webhook's delivery (none, or one row). */
export const findDelivery = (sql: SqlClient.SqlClient, webhookId: string, deliveryId: string) =>
  sql`SELECT * FROM webhook_deliveries WHERE id = ${deliveryId} AND webhook_id = ${webhookId}`.pipe(
    decodeRows(DeliveryRow)
  )

/** The attempts logged for a delivery, in order. */
export const attemptsOf = (sql: SqlClient.SqlClient, seq: number) =>
  sql`SELECT * FROM webhook_attempts WHERE delivery_seq = ${seq} ORDER BY attempt`.pipe(decodeRows(AttemptRow))

/**
 * Deletes finished deliveries older than their organization's plan's retention (days by plan),
 * their attempts with them (a trigger); how many.
 */
export const pruneDeliveries = (
  sql: SqlClient.SqlClient,
  retentionDays: Readonly<Record<string, number>>,
  now: number
) => {
  const plans = Object.entries(retentionDays).map(([plan, days]) => ({ plan, days }))
  return sql`
    WITH doomed AS (
      DELETE FROM webhook_deliveries d USING webhooks w,
        jsonb_to_recordset(${JSON.stringify(plans)}::jsonb) AS r(plan text, days integer)
      WHERE w.id = d.webhook_id AND r.plan = ${organizationPlanExpression(sql, sql`w.org_id`)}
        AND d.status <> 'pending'
        AND d.created_at < ${new Date(now).toISOString()}::timestamptz - make_interval(days => r.days)
      RETURNING 1
    ) SELECT count(*) AS deleted FROM doomed`.pipe(decodeRows(DeletedRow), Effect.map((rows) => rows[0].deleted))
}
