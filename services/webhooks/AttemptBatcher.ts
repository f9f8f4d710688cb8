import { Cause, Context, Deferred, Duration, Effect, Layer, Queue } from "effect"
import { SqlClient } from "effect/sql"
import { countAttempts } from "./AttemptMetrics.ts"
import { Deliveries } from "./Deliveries.ts"
import {
  type AttemptRecord,
  type ClaimedDelivery,
  type ClaimedRow,
  type ClaimRequest,
  logAndClaim,
  toClaimed
} from "./QueueRows.ts"

/** One webhook's request: log these successful attempts, then claim its next due deliveries. */
interface Request extends ClaimRequest {
  readonly attempts: ReadonlyArray<AttemptRecord>
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
   * `now + delays[attempts]` (see `QueueRows.ts`). Empty when nothing is claimable
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
        const attempts = requests.flatMap((request) => request.attempts)
        return Effect.tap(logAndClaim(sql, attempts, requests), () => countAttempts(attempts))
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
          const claimed = new Map<number, Array<ClaimedRow>>()
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
