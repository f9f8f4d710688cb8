import { PgTypes } from "@effect/sql-pg"
import type { SqlClient } from "effect/sql"
import type { DeliveryStatus } from "../../schemas/Webhooks.ts"
import { pgArray as column } from "../platform/PgArrayParam.ts"

/**
 * Claims and the attempt log in SQL, shared by `Deliveries` (one webhook at a time) and
 * `AttemptBatcher` (many webhooks in one statement). A claimed attempt has `attempts` counted
 * and `claimed_at` set (columns no index covers: a HOT update); its retry, should the runner
 * die before logging it, is due `claimed_at` + the delay after that attempt. Logging a failed
 * attempt moves `next_attempt_at` to its retry and ends the claim.
 */

/** The head of a webhook's queue. */
export interface QueuedDelivery {
  readonly seq: number
  readonly id: string
  readonly event: string
  readonly payload: string
  readonly attempts: number
  readonly dueAt: number
}

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

/** SQL: logs the attempts `r` (an attempt logged before is left as it is). */
export const LOG_ATTEMPTS = `INSERT INTO webhook_attempts (delivery_seq, attempt, started_at, duration_ms,
  request_headers, request_body, response_code, response_headers, response_body, error)
  SELECT seq, attempt, "startedAt", "durationMs", "requestHeaders", "requestBody", "responseCode", "responseHeaders",
    "responseBody", error
  FROM r ON CONFLICT DO NOTHING`

/**
 * SQL assignments logging an attempt `r` (see `attemptRows`) on its delivery `d`: a failed
 * attempt with retries left moves the timer to its retry and ends the claim. The queue follows
 * with `QUEUE_AFTER_ATTEMPTS`. No index covers these columns: a HOT update.
 */
export const RECORD_SET = `status = r.status, response_code = r."responseCode", duration_ms = r."durationMs",
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
export const QUEUE_AFTER_ATTEMPTS = `dequeued AS (
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
 * `delays` (jsonb, as in `AttemptBatcher`'s claims) and `now` are SQL expressions.
 */
export const CLAIM_EXPIRED = (row: string, delays: string, now: string) =>
  `(${row}.claimed_at IS NULL OR ${row}.claimed_at + make_interval(secs => (${delays}->>(${row}.attempts - 1))::float8 / 1000) <= ${now})`

/**
 * A claimed attempt: `dueAt` is the claim's time; `wasDueAt` the delivery's place in the queue
 * (`next_attempt_at`); `wasClaimedAt` the claim it replaced (a runner died during that attempt).
 */
export interface ClaimedDelivery extends QueuedDelivery {
  readonly wasDueAt: number
  readonly wasClaimedAt: number | null
}

/** Rows of a claim statement (`RETURNING … was_due`), in queue order. */
export const toClaimed = (
  rows: ReadonlyArray<
    QueuedRow & { readonly was_due: string | number; readonly was_claimed: string | number | null }
  >,
  now: number
): ReadonlyArray<ClaimedDelivery> =>
  rows.map((row) => ({
    seq: Number(row.seq),
    id: row.id,
    event: row.event,
    payload: row.payload,
    attempts: row.attempts,
    // The claimed attempt is due now (the row's timer already points at the retry after it).
    dueAt: now,
    wasDueAt: Number(row.was_due),
    wasClaimedAt: row.was_claimed === null ? null : Number(row.was_claimed)
  })).sort((a, b) => a.wasDueAt - b.wasDueAt || a.seq - b.seq)

/**
 * SQL: the attempts as rows `r` (columns `seq`, `attempt`, `"startedAt"`, `"durationMs"`,
 * `"requestHeaders"`, `"requestBody"`, `"responseCode"`, `"responseHeaders"`, `"responseBody"`,
 * `error`, `status`, `"retryAt"`), one typed binary array per column expanded by `unnest`:
 * Postgres reads them without parsing a JSON document of rows (headers are parsed once, by
 * their `json` cast).
 */
export const attemptRows = (sql: SqlClient.SqlClient, attempts: ReadonlyArray<AttemptRecord>) => {
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

export type QueuedRow = Omit<QueuedDelivery, "seq" | "dueAt"> & {
  readonly seq: string | number
  readonly due_at: string | number
}
