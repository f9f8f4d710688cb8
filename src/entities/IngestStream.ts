import { Cause, Deferred, Effect, Queue, Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { SqlClient } from "effect/sql"
import { IngestClock } from "../../services/observe/Collaborators.ts"
import type { PreparedEvent } from "../../services/observe/EventPreparation.ts"
import { IngestWriter } from "../../services/observe/IngestWriter.ts"
import { currentWindow, decide, emptyWindow, type SamplingWindow } from "../../services/observe/Sampling.ts"

/**
 * One ingest stream per organization (GUIDE §1, §7): the single place that samples the
 * organization's events against its plan and writes them.
 *
 * Group commit: `Ingest` handlers run concurrently; each appends its events to the
 * pending list and waits. One writer fiber takes everything pending (up to
 * `maxEventsPerCommit`, whole requests), commits it in one transaction
 * (`IngestWriter.commit`) and only then answers those requests, so a 202 means durable.
 * While a commit runs the next requests gather, so the batch grows with the load and
 * an idle stream commits a lone event at once. A failed commit fails its requests
 * (the client sees a 500 and may retry); nothing is half-written.
 *
 * The sampling window lives here (in memory, written with every commit) so every
 * runner's requests are sampled against one count.
 */

export const EventQuota = Schema.Struct({
  start: Schema.Number,
  total: Schema.Number,
  kept: Schema.Number,
  previousTotal: Schema.Number
})

/** Samples and durably writes a request's prepared events; answers after the commit. */
export const Ingest = Rpc.make("Ingest", {
  payload: {
    /** The plan's events per minute; null = unlimited. */
    limit: Schema.NullOr(Schema.Int),
    /**
     * `PreparedEvent`s, validated by the runner that prepared them and passed through as
     * plain data: re-encoding thousands of fields per request against their schema cost
     * more than the rest of the entity call.
     */
    events: Schema.Array(Schema.Unknown)
  },
  success: EventQuota
})

export const IngestStream = Entity.make("IngestStream", [Ingest])

/** Above this many events a commit is cut (between requests). */
const maxEventsPerCommit = 500

interface Pending {
  readonly events: ReadonlyArray<PreparedEvent>
  readonly limit: number | null
  readonly done: Deferred.Deferred<SamplingWindow>
}

export const IngestStreamEntityLayer = IngestStream.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const sql = yield* SqlClient.SqlClient
    const writer = yield* IngestWriter
    const clock = yield* IngestClock
    const orgId = address.entityId

    const stored = yield* sql<{ window_start: string; total: number; kept: number; previous_total: number }>`
      SELECT window_start, total, kept, previous_total FROM observe_ingest_windows WHERE org_id = ${orgId}`.pipe(
      Effect.orDie
    )
    let window: SamplingWindow = stored.length === 0 ? emptyWindow : {
      start: Number(stored[0].window_start),
      total: stored[0].total,
      kept: stored[0].kept,
      previousTotal: stored[0].previous_total
    }

    const pending: Array<Pending> = []
    const wake = yield* Queue.sliding<void>(1)

    const commitPending = Effect.gen(function*() {
      const batch: Array<Pending> = []
      let size = 0
      while (pending.length > 0 && (batch.length === 0 || size + pending[0].events.length <= maxEventsPerCommit)) {
        const next = pending.shift()!
        batch.push(next)
        size += next.events.length
      }
      const before = window
      const limit = batch[batch.length - 1].limit
      let current = currentWindow(window, clock.now())
      const sampler = {
        decide: (_event: PreparedEvent, force: boolean) => {
          const decision = decide(current, limit, force, Math.random())
          current = decision.window
          return decision.weight
        },
        window: () => current
      }
      const exit = yield* Effect.exit(writer.commit(orgId, batch.flatMap((entry) => entry.events), sampler))
      if (exit._tag === "Success") {
        window = current
        for (const entry of batch) Deferred.doneUnsafe(entry.done, Effect.succeed(current))
      } else {
        window = before
        yield* Effect.logWarning("IngestStream: commit failed", exit.cause).pipe(Effect.annotateLogs({ orgId }))
        for (const entry of batch) Deferred.doneUnsafe(entry.done, Effect.die(Cause.squash(exit.cause)))
      }
      if (pending.length > 0) Queue.offerUnsafe(wake, undefined)
    })

    yield* Queue.take(wake).pipe(
      Effect.andThen(Effect.suspend(() => pending.length > 0 ? commitPending : Effect.void)),
      Effect.forever,
      Effect.forkScoped
    )

    return IngestStream.of({
      Ingest: ({ payload }) =>
        Effect.gen(function*() {
          const done = yield* Deferred.make<SamplingWindow>()
          pending.push({ events: payload.events as ReadonlyArray<PreparedEvent>, limit: payload.limit, done })
          Queue.offerUnsafe(wake, undefined)
          return yield* Deferred.await(done)
        })
    })
  }),
  // Requests of one organization run concurrently: they meet in the group commit.
  { concurrency: "unbounded", maxIdleTime: "5 minutes" }
)
