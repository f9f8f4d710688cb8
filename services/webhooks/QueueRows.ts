import { PgTypes } from "@effect/sql-pg"
import { Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { DeliveryStatus } from "../../schemas/webhooks/Webhooks.ts"
import { pgArray as column } from "../platform/PgArrayParam.ts"
import { decodeRows, Int8 } from "../platform/Rows.ts"

/*
 * The queue of pending webhook deliveries: claims, retries and the attempts' log writes, on
 * `webhook_deliveries`, `webhook_queue` and `webhook_attempts` (the tables' one owner), run
 * by `Deliveries` (one webhook at a time) and `AttemptBatcher` (many webhooks in one
 * statement) on their connection; rows come back decoded with the Schemas below.
 *
 * A pending delivery is queued work and `next_attempt_at` its durable timer; `webhook_queue`
 * holds a copy of `(webhook_id, next_attempt_at, seq)` of every pending delivery, written in
 * the same statements, and is what claims scan (migration 0019). A claimed attempt has
 * `attempts` counted and `claimed_at` set (columns no index covers: a HOT update); its retry,
 * should the runner die before logging it, is due `claimed_at` + the delay after that attempt.
 * Logging a failed attempt moves `next_attempt_at` to its retry and ends the claim.
 */

/** Epoch milliseconds computed in SQL (`extract(epoch FROM …) * 1000`: a `numeric`). */
const EpochMs = Schema.NumberFromString

/** The head of a webhook's queue, due at `due_at`. */
export const QueuedRow = Schema.Struct({
  seq: Int8,
  id: Schema.String,
  event: Schema.String,
  payload: Schema.String,
  attempts: Schema.Int,
  due_at: EpochMs
})

/** A delivery claimed for request `n` of a batched claim; its queue time and the claim it replaced. */
export const ClaimedRow = Schema.Struct({
  n: Schema.Int,
  seq: Int8,
  id: Schema.String,
  event: Schema.String,
  payload: Schema.String,
  attempts: Schema.Int,
  traceparent: Schema.NullOr(Schema.String),
  was_due: EpochMs,
  was_claimed: Schema.NullOr(EpochMs)
})
export type ClaimedRow = typeof ClaimedRow.Type

/** A webhook with pending deliveries, and the earliest one's due time. */
export const PendingRow = Schema.Struct({ webhook_id: Schema.String, due_at: EpochMs })

export interface AttemptRecord {
  readonly seq: number
  readonly attempt: number
  readonly startedAt: Date
  readonly durationMs: number
  readonly request: {
    readonly headers: Readonly<Record<string, string>>
    /** The logged body; null when it is exactly the delivery's payload (stored once, with the delivery). */
    readonly body: string | null
  }
  readonly response: {
    readonly statusCode: number
    readonly headers: Readonly<Record<string, string>>
    readonly body: string
  } | null
  readonly error: string | null
  /** The delivery's status after this attempt. */
  readonly status: DeliveryStatus
  /** When the next attempt is due (status pending). */
  readonly retryAt: Date | null
}

/** One webhook's claim in a batched claim: up to `limit` deliveries due at `now` (ms). */
export interface ClaimRequest {
  readonly webhookId: string
  readonly now: number
  readonly delays: ReadonlyArray<number>
  readonly limit: number
}

/** The head of a webhook's queue. */
export interface QueuedDelivery {
  readonly seq: number
  readonly id: string
  readonly event: string
  readonly payload: string
  readonly attempts: number
  readonly dueAt: number
}

export const toQueued = (row: typeof QueuedRow.Type): QueuedDelivery => ({
  seq: row.seq,
  id: row.id,
  event: row.event,
  payload: row.payload,
  attempts: row.attempts,
  dueAt: Math.round(row.due_at)
})

/**
 * A claimed attempt: `dueAt` is the claim's time; `wasDueAt` the delivery's place in the queue
 * (`next_attempt_at`); `wasClaimedAt` the claim it replaced (a runner died during that attempt).
 */
export interface ClaimedDelivery extends QueuedDelivery {
  /** The `traceparent` of the span that queued it: the parent of its request's client span. */
  readonly traceparent: string | null
  readonly wasDueAt: number
  readonly wasClaimedAt: number | null
}

/** Rows of a claim, in queue order. */
export const toClaimed = (rows: ReadonlyArray<ClaimedRow>, now: number): ReadonlyArray<ClaimedDelivery> =>
  rows.map((row) => ({
    seq: row.seq,
    id: row.id,
    event: row.event,
    payload: row.payload,
    attempts: row.attempts,
    traceparent: row.traceparent,
    // The claimed attempt is due now (the row's timer already points at the retry after it).
    dueAt: now,
    wasDueAt: row.was_due,
    wasClaimedAt: row.was_claimed
  })).sort((a, b) => a.wasDueAt - b.wasDueAt || a.seq - b.seq)

/* Claims and the attempt log. */

/** SQL: logs the attempts `r` (an attempt logged before is left as it is). */
const LOG_ATTEMPTS = `INSERT INTO webhook_attempts (delivery_seq, attempt, started_at, duration_ms,
  request_headers, request_body, response_code, response_headers, response_body, error)
  SELECT seq, attempt, "startedAt", "durationMs", "requestHeaders", "requestBody", "responseCode", "responseHeaders",
    "responseBody", error
  FROM r ON CONFLICT DO NOTHING`

/**
 * SQL assignments logging an attempt `r` (see `attemptRows`) on its delivery `d`: a failed
 * attempt with retries left moves the timer to its retry and ends the claim. The queue follows
 * with `QUEUE_AFTER_ATTEMPTS`. No index covers these columns: a HOT update.
 */
const RECORD_SET = `status = r.status, response_code = r."responseCode", duration_ms = r."durationMs",
  delivered_at = r."startedAt",
  next_attempt_at = CASE WHEN r.status = 'pending' THEN r."retryAt" ELSE d.next_attempt_at END,
  claimed_at = CASE WHEN r.status = 'pending' THEN NULL ELSE d.claimed_at END`

/**
 * SQL: keeps the queue (`webhook_queue`, one row per pending delivery) in step with the
 * attempts `r` being logged, as two CTEs (`dequeued`, `requeued`) of the logging statement: a
 * delivery that ends leaves the queue, one with a retry moves to its retry time. Like
 * `RECORD_SET`, only for a delivery still pending at the attempt logged; the queue row is
 * found by its delivery's `next_attempt_at` as the statement sees it.
 */
const QUEUE_AFTER_ATTEMPTS = `dequeued AS (
    DELETE FROM webhook_queue q USING r, webhook_deliveries o
    WHERE o.seq = r.seq AND o.attempts = r.attempt AND o.status = 'pending' AND r.status <> 'pending'
      AND q.webhook_id = o.webhook_id AND q.next_attempt_at = o.next_attempt_at AND q.seq = o.seq
  ), requeued AS (
    UPDATE webhook_queue q SET next_attempt_at = r."retryAt" FROM r, webhook_deliveries o
    WHERE o.seq = r.seq AND o.attempts = r.attempt AND o.status = 'pending' AND r.status = 'pending'
      AND q.webhook_id = o.webhook_id AND q.next_attempt_at = o.next_attempt_at AND q.seq = o.seq
  )`

/**
 * SQL condition: a pending row's claim, if any, has expired, i.e. the runner that claimed its
 * last attempt died before logging it and the retry after that attempt is due at `now`.
 * `delays` (jsonb, as in the batched claim) and `now` are SQL expressions.
 */
const CLAIM_EXPIRED = (row: string, delays: string, now: string) =>
  `(${row}.claimed_at IS NULL OR ${row}.claimed_at + make_interval(secs => (${delays}->>(${row}.attempts - 1))::float8 / 1000) <= ${now})`

/**
 * SQL: the attempts as rows `r` (columns `seq`, `attempt`, `"startedAt"`, `"durationMs"`,
 * `"requestHeaders"`, `"requestBody"`, `"responseCode"`, `"responseHeaders"`, `"responseBody"`,
 * `error`, `status`, `"retryAt"`), one typed binary array per column expanded by `unnest`:
 * Postgres reads them without parsing a JSON document of rows (headers are parsed once, by
 * their `json` cast).
 */
const attemptRows = (sql: SqlClient.SqlClient, attempts: ReadonlyArray<AttemptRecord>) => {
  const n = attempts.length
  const seq = new Array<number>(n), attempt = new Array<number>(n), startedAt = new Array<number>(n)
  const durationMs = new Array<number>(n), requestHeaders = new Array<string>(n)
  const requestBody = new Array<string | null>(n), responseCode = new Array<number | null>(n)
  const responseHeaders = new Array<string | null>(n), responseBody = new Array<string | null>(n)
  const error = new Array<string | null>(n), status = new Array<string>(n), retryAt = new Array<number | null>(n)
  for (let i = 0; i < n; i++) {
    const a = attempts[i]
    seq[i] = a.seq
    attempt[i] = a.attempt
    startedAt[i] = a.startedAt.getTime()
    durationMs[i] = a.durationMs
    requestHeaders[i] = JSON.stringify(a.request.headers)
    requestBody[i] = a.request.body
    responseCode[i] = a.response?.statusCode ?? null
    responseHeaders[i] = a.response === null ? null : JSON.stringify(a.response.headers)
    responseBody[i] = a.response?.body ?? null
    error[i] = a.error
    status[i] = a.status
    retryAt[i] = a.retryAt?.getTime() ?? null
  }
  const { OID } = PgTypes
  return sql`
    SELECT v.seq::bigint AS seq, v.attempt, v."startedAt", v."durationMs", v."requestHeaders"::json AS "requestHeaders",
      v."requestBody", v."responseCode", v."responseHeaders"::json AS "responseHeaders", v."responseBody", v.error,
      v.status, v."retryAt"
    FROM unnest(${column(seq, OID.float8)}::float8[], ${column(attempt, OID.int4)}::int4[],
      ${column(startedAt, OID.timestamptz)}::timestamptz[], ${column(durationMs, OID.int4)}::int4[],
      ${column(requestHeaders, OID.text)}::text[], ${column(requestBody, OID.text)}::text[],
      ${column(responseCode, OID.int4)}::int4[], ${column(responseHeaders, OID.text)}::text[],
      ${column(responseBody, OID.text)}::text[], ${column(error, OID.text)}::text[],
      ${column(status, OID.text)}::text[], ${column(retryAt, OID.timestamptz)}::timestamptz[])
      AS v(seq, attempt, "startedAt", "durationMs", "requestHeaders", "requestBody", "responseCode",
        "responseHeaders", "responseBody", error, status, "retryAt")`
}

/** Logs attempts and sets their deliveries' status and queue place, in one statement. */
export const logAttempts = (sql: SqlClient.SqlClient, attempts: ReadonlyArray<AttemptRecord>) =>
  sql`
    WITH r AS (${attemptRows(sql, attempts)}), logged AS (
      ${sql.literal(LOG_ATTEMPTS)}
    ), ${sql.literal(QUEUE_AFTER_ATTEMPTS)}
    UPDATE webhook_deliveries d SET ${sql.literal(RECORD_SET)}
    FROM r WHERE d.seq = r.seq AND d.attempts = r.attempt`

/**
 * Logs `attempts`, then claims for each request `n` the next attempt of up to `limit` due
 * deliveries of its webhook, in queue order, that have attempts left (`delays.length` in
 * all): `attempts + 1` and `claimed_at = now`. One statement for every request; the rows
 * claimed, tagged with their request's `n`.
 */
export const logAndClaim = (
  sql: SqlClient.SqlClient,
  attempts: ReadonlyArray<AttemptRecord>,
  requests: ReadonlyArray<ClaimRequest>
) => {
  const claims = requests.map((request, n) => ({
    n,
    webhookId: request.webhookId,
    now: new Date(request.now).toISOString(),
    delays: request.delays,
    limit: request.limit
  }))
  return sql`
    WITH r AS (${attemptRows(sql, attempts)}), c AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(claims)}::jsonb) AS c(
        n integer, "webhookId" text, now timestamptz, delays jsonb, "limit" integer)
    ), logged AS (
      ${sql.literal(LOG_ATTEMPTS)}
    ), ${sql.literal(QUEUE_AFTER_ATTEMPTS)}, recorded AS (
      UPDATE webhook_deliveries d SET ${sql.literal(RECORD_SET)}
      FROM r WHERE d.seq = r.seq AND d.attempts = r.attempt
    ), heads AS (
      -- The statement sees the rows as they were before it: the deliveries it logs are
      -- still pending there, so they are left out by hand.
      SELECT c.n, h.seq, h.next_attempt_at AS was_due, h.claimed_at AS was_claimed
      FROM c CROSS JOIN LATERAL (
        SELECT w.seq, w.next_attempt_at, w.claimed_at
        FROM webhook_queue q JOIN webhook_deliveries w ON w.seq = q.seq
        WHERE q.webhook_id = c."webhookId" AND q.next_attempt_at <= c.now AND q.seq NOT IN (SELECT seq FROM r)
          AND w.status = 'pending' AND w.attempts < jsonb_array_length(c.delays)
          AND ${sql.literal(CLAIM_EXPIRED("w", "c.delays", "c.now"))}
        ORDER BY q.next_attempt_at, q.seq LIMIT c."limit"
      ) AS h
    )
    UPDATE webhook_deliveries d SET attempts = d.attempts + 1, claimed_at = c.now
    FROM heads JOIN c ON c.n = heads.n
    WHERE d.seq = heads.seq
    RETURNING c.n, d.seq, d.id, d.event, d.payload, d.attempts, d.traceparent, 0 AS due_at,
      extract(epoch FROM heads.was_due) * 1000 AS was_due,
      extract(epoch FROM heads.was_claimed) * 1000 AS was_claimed`.pipe(decodeRows(ClaimedRow))
}

/** Gives back claims never started: the attempt count and claim return to what they were. */
export const releaseClaims = (sql: SqlClient.SqlClient, claims: ReadonlyArray<ClaimedDelivery>) => {
  const rows = claims.map((claim) => ({
    seq: claim.seq,
    attempts: claim.attempts,
    claimed: claim.wasClaimedAt === null ? null : new Date(claim.wasClaimedAt).toISOString()
  }))
  return sql`
    UPDATE webhook_deliveries d SET attempts = d.attempts - 1, claimed_at = r.claimed
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(seq bigint, attempts integer, claimed timestamptz)
    WHERE d.seq = r.seq AND d.attempts = r.attempts AND d.status = 'pending'`
}

/**
 * The next delivery of a webhook to attempt (none, or one row): the earliest due at or after
 * `now` (ms), claims counting at their retry time.
 */
export const queueHead = (sql: SqlClient.SqlClient, webhookId: string, now: number, delays: ReadonlyArray<number>) => {
  const at = new Date(now).toISOString()
  const jsonDelays = JSON.stringify(delays)
  // Rows due by their place in the queue are few when nothing is claimable (claims in
  // flight or left by a dead runner, exhausted ones): their real time is computed;
  // beyond them the index gives the next one. A claim past the delays (the webhook's
  // retries lowered since) has no retry left: it is due at its claim, and then failed.
  return sql`
    SELECT * FROM (
      (SELECT seq, id, event, payload, attempts, extract(epoch FROM CASE WHEN claimed_at IS NULL
          THEN next_attempt_at
          ELSE claimed_at + make_interval(secs => coalesce((${jsonDelays}::jsonb->>(attempts - 1))::float8, 0) / 1000)
        END) * 1000 AS due_at
      FROM webhook_deliveries
      WHERE status = 'pending' AND seq IN (
        SELECT seq FROM webhook_queue WHERE webhook_id = ${webhookId} AND next_attempt_at <= ${at}::timestamptz))
      UNION ALL
      (SELECT w.seq, w.id, w.event, w.payload, w.attempts, extract(epoch FROM q.next_attempt_at) * 1000 AS due_at
      FROM webhook_queue q JOIN webhook_deliveries w ON w.seq = q.seq AND w.status = 'pending'
      WHERE q.webhook_id = ${webhookId} AND q.next_attempt_at > ${at}::timestamptz
      ORDER BY q.next_attempt_at, q.seq LIMIT 1)
    ) AS h ORDER BY due_at, seq LIMIT 1`.pipe(decodeRows(QueuedRow))
}

/** Ends a pending delivery as failed, and takes it off the queue. */
export const failDelivery = (sql: SqlClient.SqlClient, seq: number) =>
  sql`
    WITH failed AS (
      UPDATE webhook_deliveries SET status = 'failed' WHERE seq = ${seq} AND status = 'pending'
      RETURNING webhook_id, next_attempt_at, seq
    )
    DELETE FROM webhook_queue q USING failed f
    WHERE q.webhook_id = f.webhook_id AND q.next_attempt_at = f.next_attempt_at AND q.seq = f.seq`

/** Ends every pending delivery of a webhook as failed, and empties its queue. */
export const failPendingOf = (sql: SqlClient.SqlClient, webhookId: string) =>
  sql`
    WITH failed AS (
      UPDATE webhook_deliveries SET status = 'failed' WHERE webhook_id = ${webhookId} AND status = 'pending'
      RETURNING seq
    )
    DELETE FROM webhook_queue WHERE webhook_id = ${webhookId} AND seq IN (SELECT seq FROM failed)`

/** Webhooks with pending deliveries, and the earliest due time of each. */
export const webhooksWithPending = (sql: SqlClient.SqlClient) =>
  sql`
    SELECT webhook_id, extract(epoch FROM min(next_attempt_at)) * 1000 AS due_at
    FROM webhook_queue GROUP BY webhook_id`.pipe(decodeRows(PendingRow))

/** Pending deliveries across every webhook, counted up to `cap` (a metrics gauge: bounded work). */
export const queueDepth = (sql: SqlClient.SqlClient, cap: number) =>
  sql`SELECT count(*)::int AS depth FROM (SELECT 1 FROM webhook_queue LIMIT ${cap}) AS queued`.pipe(
    decodeRows(Schema.Struct({ depth: Schema.Number }))
  )
