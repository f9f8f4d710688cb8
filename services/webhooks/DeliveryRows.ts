import { Schema } from "effect"
import { DeliveryStatus } from "../../schemas/webhooks/Webhooks.ts"
import { Int8 } from "../platform/Rows.ts"

/**
 * The rows `DeliveryStatements` reads from `webhook_deliveries`, `webhook_queue` and
 * `webhook_attempts`, as Schemas (every row is decoded with one of these), and the shapes
 * its statements take and give. Column types as the driver gives them: `int8` (`seq`, `count(*)`)
 * as a `bigint`, `numeric` (the `extract(epoch …) * 1000` times) as a string, `timestamptz`
 * as a `Date`, `jsonb` parsed.
 */

/** Epoch milliseconds computed in SQL (`extract(epoch FROM …) * 1000`: a `numeric`). */
const EpochMs = Schema.NumberFromString

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
  was_due: EpochMs,
  was_claimed: Schema.NullOr(EpochMs)
})
export type ClaimedRow = typeof ClaimedRow.Type

/** A webhook with pending deliveries, and the earliest one's due time. */
export const PendingRow = Schema.Struct({ webhook_id: Schema.String, due_at: EpochMs })

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
    // The claimed attempt is due now (the row's timer already points at the retry after it).
    dueAt: now,
    wasDueAt: row.was_due,
    wasClaimedAt: row.was_claimed
  })).sort((a, b) => a.wasDueAt - b.wasDueAt || a.seq - b.seq)
