import { Cause, Deferred, Effect, Exit, Queue } from "effect"
import { Entity } from "effect/cluster"
import { SqlClient } from "effect/sql"
import {
  count,
  ingestCommitDuration,
  ingestCommitSize,
  ingestEvents,
  observe
} from "../../../services/metrics/Metrics.ts"
import { Alerts } from "../../../services/observe/Alerts.ts"
import { type CommitPlan, planCommit, userPairKey } from "../../../services/observe/CommitPlan.ts"
import type { PreparedEvent } from "../../../services/observe/EventPreparation.ts"
import { IngestClock } from "../../../services/observe/IngestClock.ts"
import { IngestStream } from "../../../services/observe/IngestStreamProtocol.ts"
import { loadIngestWindow } from "../../../services/observe/IngestWindowRows.ts"
import { IngestWriter } from "../../../services/observe/IngestWriter.ts"
import { foldIssueCounters } from "../../../services/observe/IssueRows.ts"
import { currentWindow, decide, type SamplingWindow } from "../../../services/observe/Sampling.ts"
import { SpikeDetector } from "../../../services/observe/Spikes.ts"

/**
 * One ingest stream per organization (GUIDE §1, §7): the single place that samples the
 * organization's events against its plan and writes them.
 *
 * Group commit: `Ingest` handlers run concurrently; each appends its events to the
 * pending list and waits. One committer fiber takes everything pending (up to
 * `maxEventsPerCommit`, whole requests), decides it (`planCommit`: issues, sampling)
 * and writes it in one transaction (`IngestWriter.write`); those requests are answered
 * only after that commit, so a 202 means durable. One commit at a time: while it runs the
 * next requests gather, so batches grow with the load and an idle stream commits a lone
 * event at once; and no commit waits on another's locks on the issue and release rows
 * most commits update. A failed commit fails its requests (the client sees a 500 and may
 * retry); nothing is half-written.
 *
 * The sampling window lives here (in memory, written with every commit) so every
 * runner's requests are sampled against one count.
 *
 * Counters of issues that exist are buffered by each commit (`observe_issue_pending`); a
 * folder fiber folds them into the issue rows at most once per `foldEvery`, after commits
 * and once at start (rows a crash left), so many commits share one update per issue.
 * Readers fold too before they read (`Issues`), so they never wait for it.
 */

/** Above this many events a commit is cut (between requests). */
const maxEventsPerCommit = 2000
/** Fingerprints whose issue id is remembered; past this the memory starts over. */
const maxKnownFingerprints = 100_000
/** The least time between two folds of the buffered issue counters by the entity. */
const foldEvery = "1 second"
/** Stack ids and issue × user pairs remembered as committed; past this the memory starts over. */
const maxRememberedRows = 200_000

/** A set that starts over when full: a forgotten row only costs a redundant upsert. */
const boundedSet = (max: number) => {
  const set = new Set<string>()
  return {
    has: (key: string) => set.has(key),
    add: (key: string) => {
      if (set.size >= max) set.clear()
      set.add(key)
    }
  }
}

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
    const alerts = yield* Alerts
    const orgId = address.entityId
    const spikes = new SpikeDetector()

    let window: SamplingWindow = yield* loadIngestWindow(sql, orgId).pipe(Effect.orDie)

    const pending: Array<Pending> = []
    const wake = yield* Queue.sliding<void>(1)
    // fingerprint → issue id, for the issues that exist or that a commit in flight creates.
    const known = new Map<string, string>()
    const issueIds = {
      get: (fingerprint: string) => known.get(fingerprint),
      set: (fingerprint: string, id: string) => {
        if (known.size >= maxKnownFingerprints) known.clear()
        known.set(fingerprint, id)
      }
    }
    // Stacks and distinct-user pairs this entity committed: not sent again. This entity is
    // their organization's only writer and they are never deleted but with the organization.
    const storedStacks = boundedSet(maxRememberedRows)
    const seenUsers = boundedSet(maxRememberedRows)
    const storedRows = { hasStack: storedStacks.has, hasUser: seenUsers.has }
    const remember = (plan: CommitPlan) => {
      for (const stackId of plan.stacks.keys()) storedStacks.add(stackId)
      for (const pair of plan.users) seenUsers.add(userPairKey(pair.issue_id, pair.user_key))
    }

    const finish = (batch: ReadonlyArray<Pending>, exit: Exit.Exit<SamplingWindow, unknown>) =>
      Effect.gen(function*() {
        if (exit._tag === "Failure") {
          yield* Effect.logWarning("IngestStream: commit failed", exit.cause).pipe(Effect.annotateLogs({ orgId }))
        }
        for (const entry of batch) {
          Deferred.doneUnsafe(
            entry.done,
            exit._tag === "Success" ? Effect.succeed(exit.value) : Effect.die(Cause.squash(exit.cause))
          )
        }
      })

    /** Counts a committed plan's error events per organization and issue; raises the spikes that open. */
    const detectSpikes = (plan: CommitPlan) =>
      Effect.suspend(() => {
        const now = clock.now()
        let total = 0
        for (const issue of plan.issues) {
          spikes.record(issue.id, now, issue.count)
          total += issue.count
        }
        if (total === 0) return Effect.void
        spikes.record("org", now, total)
        const opened = spikes.evaluate(["org", ...plan.issues.map((issue) => issue.id)], now)
        if (opened.length === 0) return Effect.void
        return alerts.raise(orgId, opened, now).pipe(
          Effect.catchCause((cause) => Effect.logWarning("IngestStream: spike alert failed", cause))
        )
      })

    /** Takes the next batch (whole requests, up to `maxEventsPerCommit`), commits it and answers it. */
    const commitNext = Effect.suspend(() => {
      const batch: Array<Pending> = []
      let size = 0
      while (pending.length > 0 && (batch.length === 0 || size + pending[0].events.length <= maxEventsPerCommit)) {
        const next = pending.shift()!
        batch.push(next)
        size += next.events.length
      }
      // Whatever goes wrong fails this batch's requests, not the committer.
      return commit(batch).pipe(Effect.catchCause((cause) => finish(batch, Exit.failCause(cause))))
    })

    const commit = (batch: ReadonlyArray<Pending>) =>
      Effect.gen(function*() {
        const events = batch.flatMap((entry) => entry.events)
        const unknown = [...new Set(events.flatMap((event) => event.fingerprint ?? []))]
          .filter((fingerprint) => !known.has(fingerprint))
        for (const row of yield* writer.lookupIssues(orgId, unknown)) issueIds.set(row.fingerprint, row.id)

        const limit = batch[batch.length - 1].limit
        let current = currentWindow(window, clock.now())
        const plan = planCommit(events, issueIds, (_event, force) => {
          const decision = decide(current, limit, force, Math.random())
          current = decision.window
          return decision.weight
        }, storedRows)
        const started = performance.now()
        const exit = yield* Effect.exit(writer.write(orgId, plan, current))
        yield* recordCommit(orgId, events.length, plan, exit._tag === "Success", performance.now() - started)
        if (exit._tag === "Failure") {
          // The window stays as it was; a created issue whose commit failed is created again by its next event.
          for (const issue of plan.issues) {
            if (issue.isNew && known.get(issue.fingerprint) === issue.id) known.delete(issue.fingerprint)
          }
          return yield* finish(batch, Exit.failCause(exit.cause))
        }
        window = current
        remember(plan)
        if (plan.issues.some((issue) => !issue.isNew)) Queue.offerUnsafe(foldWake, undefined)
        // Spikes before answering: a client that saw 202 can already see the alert it caused.
        yield* detectSpikes(plan)
        yield* finish(batch, Exit.succeed(current))
      })

    // One folder: a fold at start, then after commits, at most one per `foldEvery` (it runs
    // beside the committer: commits never write the rows a fold updates).
    const foldWake = yield* Queue.sliding<void>(1)
    Queue.offerUnsafe(foldWake, undefined)
    yield* Queue.take(foldWake).pipe(
      Effect.andThen(foldIssueCounters(sql, orgId)),
      Effect.catchCause((cause) =>
        Effect.logWarning("IngestStream: fold failed", cause).pipe(Effect.annotateLogs({ orgId }))
      ),
      Effect.andThen(Effect.sleep(foldEvery)),
      Effect.forever,
      Effect.forkScoped
    )

    // One committer: each commit takes everything pending when the previous one ends, so
    // batches grow with the load (no timer) and commits never wait on each other's row
    // locks; an idle stream commits a lone event at once.
    yield* Queue.take(wake).pipe(
      Effect.andThen(Effect.whileLoop({ while: () => pending.length > 0, body: () => commitNext, step: () => {} })),
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

/** One group commit in the ingest metrics: its size and time, and its events by outcome. */
const recordCommit = (orgId: string, size: number, plan: CommitPlan, committed: boolean, elapsedMs: number) =>
  Effect.all([
    observe(ingestCommitSize, size),
    observe(ingestCommitDuration, elapsedMs / 1000),
    committed
      ? Effect.andThen(
        count(ingestEvents, { outcome: "accepted", reason: "" }, { org: orgId, by: plan.kept.length }),
        count(ingestEvents, { outcome: "sampled", reason: "over_plan" }, { org: orgId, by: plan.dropped })
      )
      : count(ingestEvents, { outcome: "dropped", reason: "commit_failed" }, { org: orgId, by: size })
  ], { discard: true })
