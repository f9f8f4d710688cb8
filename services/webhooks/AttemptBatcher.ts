import { Cause, Context, Deferred, Duration, Effect, Layer, Queue } from "effect"
import { SqlClient } from "effect/sql"
import { Deliveries } from "./Deliveries.ts"
import {
  type AttemptRecord,
  attemptRows,
  CLAIM_EXPIRED,
  type ClaimedDelivery,
  LOG_ATTEMPTS,
  QUEUE_AFTER_ATTEMPTS,
  type QueuedRow,
  RECORD_SET,
  toClaimed
} from "./DeliveryClaims.ts"

/** One webhook's request: log these successful attempts, then claim its next due deliveries. */
interface Request {
  readonly attempts: ReadonlyArray<AttemptRecord>
  readonly webhookId: string
  readonly now: number
  readonly delays: ReadonlyArray<number>
  readonly limit: number
  readonly reply: Deferred.Deferred<ReadonlyArray<ClaimedDelivery>>
}

/** Requests per statement at most. */
const MAX_BATCH = 200
/** Statements in flight at once. */
const WRITERS = 2
/** How long a stopping webhook waits for a statement in flight before leaving its claims to their timers. */
const RELEASE_WAIT = Duration.seconds(5)

/**
 * The hot path of deliveries across every webhook of a runner: "log my successful attempts
 * and claim my next deliveries" requests of many webhooks go to Postgres together, in one
 * statement, instead of one statement (one commit) per webhook. No timer: a writer takes
 * whatever queued while the previous statement ran (1 to 200 requests), so a lone request
 * goes at once and a busy runner writes in large batches.
 *
 * Per webhook nothing changes: its entity waits for the reply before its next attempt, so
 * one delivery at a time in queue order. Every claim goes through here, with or without
 * attempts to log, so webhooks woken together by a fan-out claim in one statement.
 */
export class AttemptBatcher extends Context.Service<AttemptBatcher, {
  /**
   * Logs `attempts` (successes), then claims the next attempt of up to `limit` due deliveries
   * of the webhook, in queue order (earliest due first), that have attempts left
   * (`delays.length` attempts in all): for each, `attempts + 1` and `claimed_at = now` are
   * committed, so should the runner die before logging the attempt, its retry is due at
   * `now + delays[attempts]` (see `DeliveryClaims.ts`). Empty when nothing is claimable
   * (see `Deliveries.head`).
   */
  readonly recordAndClaim: (
    attempts: ReadonlyArray<AttemptRecord>,
    webhookId: string,
    now: number,
    delays: ReadonlyArray<number>,
    limit: number
  ) => Effect.Effect<ReadonlyArray<ClaimedDelivery>>
}>()("canopy/webhooks/AttemptBatcher") {
  static readonly layer = Layer.effect(
    AttemptBatcher,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const deliveries = yield* Deliveries
      const queue = yield* Queue.unbounded<Request>()

      const write = (requests: ReadonlyArray<Request>) => {
        const logged = requests.flatMap((request) => request.attempts)
        const claims = requests.map((request, n) => ({
          n,
          webhookId: request.webhookId,
          now: new Date(request.now).toISOString(),
          delays: request.delays,
          limit: request.limit
        }))
        return sql<QueuedRow & { n: number; was_due: string | number; was_claimed: string | number | null }>`
          WITH r AS (${attemptRows(sql, logged)}), c AS (
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
          RETURNING c.n, d.seq, d.id, d.event, d.payload, d.attempts, 0 AS due_at,
            extract(epoch FROM heads.was_due) * 1000 AS was_due,
            extract(epoch FROM heads.was_claimed) * 1000 AS was_claimed`
      }

      const writer = Effect.gen(function*() {
        while (true) {
          const requests = yield* Queue.takeBetween(queue, 1, MAX_BATCH)
          const exit = yield* Effect.exit(write(requests))
          if (exit._tag === "Failure") {
            // Each waiting entity fails its drain (logged and retried by its alarm), as a
            // failed single statement would.
            for (const request of requests) Deferred.doneUnsafe(request.reply, Effect.die(Cause.squash(exit.cause)))
            continue
          }
          const claimed = new Map<number, Array<(typeof exit.value)[number]>>()
          for (const row of exit.value) {
            const rows = claimed.get(row.n) ?? []
            rows.push(row)
            claimed.set(row.n, rows)
          }
          requests.forEach((request, n) =>
            Deferred.doneUnsafe(request.reply, Effect.succeed(toClaimed(claimed.get(n) ?? [], request.now)))
          )
        }
      })
      for (let n = 0; n < WRITERS; n++) yield* Effect.forkScoped(writer)

      const recordAndClaim = (
        attempts: ReadonlyArray<AttemptRecord>,
        webhookId: string,
        now: number,
        delays: ReadonlyArray<number>,
        limit: number
      ) =>
        Effect.gen(function*() {
          const reply = yield* Deferred.make<ReadonlyArray<ClaimedDelivery>>()
          yield* Queue.offer(queue, { attempts, webhookId, now, delays, limit, reply })
          // A webhook stopped while its statement runs gives back what the statement claims
          // for it (nobody will send those now); past the wait, they go at their retry time.
          return yield* Deferred.await(reply).pipe(
            Effect.onInterrupt(() =>
              Deferred.await(reply).pipe(
                Effect.flatMap(deliveries.release),
                Effect.timeoutOption(RELEASE_WAIT),
                Effect.ignore
              )
            )
          )
        })

      return AttemptBatcher.of({ recordAndClaim })
    })
  )
}
