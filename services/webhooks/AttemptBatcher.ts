import { Cause, Context, Deferred, Effect, Layer, Option, Queue } from "effect"
import { SqlClient } from "effect/sql"
import type { AttemptRecord, QueuedDelivery } from "./Deliveries.ts"

/** One webhook's request: log this successful attempt, then claim its next due delivery. */
interface Request {
  readonly attempt: AttemptRecord
  readonly webhookId: string
  readonly now: number
  readonly delays: ReadonlyArray<number>
  readonly reply: Deferred.Deferred<Option.Option<QueuedDelivery>>
}

/** Rows per statement at most. */
const MAX_BATCH = 200
/** Statements in flight at once. */
const WRITERS = 2

/**
 * The hot path of deliveries across every webhook of a runner: "log my successful attempt
 * and claim my next delivery" requests of many webhooks go to Postgres together, in one
 * statement, instead of one statement (one commit) per delivery. No timer: a writer takes
 * whatever queued while the previous statement ran (1 to 200 requests), so a lone request
 * goes at once and a busy runner writes in large batches.
 *
 * Per webhook nothing changes: its entity waits for the reply before its next attempt, so
 * one delivery at a time in queue order; the claim rules are `Deliveries.claimNext`'s.
 */
export class AttemptBatcher extends Context.Service<AttemptBatcher, {
  readonly recordAndClaimNext: (
    attempt: AttemptRecord,
    webhookId: string,
    now: number,
    delays: ReadonlyArray<number>
  ) => Effect.Effect<Option.Option<QueuedDelivery>>
}>()("canopy/webhooks/AttemptBatcher") {
  static readonly layer = Layer.effect(
    AttemptBatcher,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const queue = yield* Queue.unbounded<Request>()

      const write = (requests: ReadonlyArray<Request>) => {
        const rows = requests.map((request, n) => {
          const { attempt } = request
          return {
            n,
            seq: attempt.seq,
            attempt: attempt.attempt,
            startedAt: attempt.startedAt.toISOString(),
            durationMs: attempt.durationMs,
            requestHeaders: attempt.request.headers,
            requestBody: attempt.request.body,
            responseCode: attempt.response?.statusCode ?? null,
            responseHeaders: attempt.response?.headers ?? null,
            responseBody: attempt.response?.body ?? null,
            error: attempt.error,
            status: attempt.status,
            webhookId: request.webhookId,
            now: new Date(request.now).toISOString(),
            delays: request.delays
          }
        })
        return sql<{ n: number; seq: string | number; id: string; event: string; payload: string; attempts: number }>`
          WITH r AS (
            SELECT * FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(
              n integer, seq bigint, attempt integer, "startedAt" timestamptz, "durationMs" integer,
              "requestHeaders" jsonb, "requestBody" text, "responseCode" integer, "responseHeaders" jsonb,
              "responseBody" text, error text, status text, "webhookId" text, now timestamptz, delays jsonb)
          ), logged AS (
            INSERT INTO webhook_attempts (
              delivery_seq, attempt, started_at, duration_ms, request_headers, request_body,
              response_code, response_headers, response_body, error
            )
            SELECT seq, attempt, "startedAt", "durationMs", "requestHeaders", "requestBody", "responseCode",
              "responseHeaders", "responseBody", error
            FROM r ON CONFLICT DO NOTHING
          ), recorded AS (
            UPDATE webhook_deliveries d SET status = r.status, response_code = r."responseCode",
              duration_ms = r."durationMs", delivered_at = r."startedAt"
            FROM r WHERE d.seq = r.seq AND d.attempts = r.attempt
          ), heads AS (
            SELECT r.n, h.seq FROM r CROSS JOIN LATERAL (
              SELECT seq FROM webhook_deliveries
              WHERE webhook_id = r."webhookId" AND status = 'pending' AND seq <> r.seq
              ORDER BY next_attempt_at, seq LIMIT 1
            ) AS h
          )
          UPDATE webhook_deliveries d SET attempts = d.attempts + 1,
            next_attempt_at = r.now + make_interval(secs => (r.delays->>d.attempts)::float8 / 1000)
          FROM heads JOIN r ON r.n = heads.n
          WHERE d.seq = heads.seq AND d.next_attempt_at <= r.now AND d.attempts < jsonb_array_length(r.delays)
          RETURNING r.n, d.seq, d.id, d.event, d.payload, d.attempts`
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
          const claimed = new Map(exit.value.map((row) => [row.n, row]))
          requests.forEach((request, n) => {
            const row = claimed.get(n)
            Deferred.doneUnsafe(
              request.reply,
              Effect.succeed(
                row === undefined ? Option.none() : Option.some({
                  seq: Number(row.seq),
                  id: row.id,
                  event: row.event,
                  payload: row.payload,
                  attempts: row.attempts,
                  // The claimed attempt is due now (the row's timer points at the retry after it).
                  dueAt: request.now
                })
              )
            )
          })
        }
      })
      for (let n = 0; n < WRITERS; n++) yield* Effect.forkScoped(writer)

      const recordAndClaimNext = (
        attempt: AttemptRecord,
        webhookId: string,
        now: number,
        delays: ReadonlyArray<number>
      ) =>
        Effect.gen(function*() {
          const reply = yield* Deferred.make<Option.Option<QueuedDelivery>>()
          yield* Queue.offer(queue, { attempt, webhookId, now, delays, reply })
          return yield* Deferred.await(reply)
        })

      return AttemptBatcher.of({ recordAndClaimNext })
    })
  )
}
