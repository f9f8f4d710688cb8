import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { makeOutboundGuard } from "../../services/outbound/OutboundGuard.ts"
import { type RunProgress, sendRun } from "../../services/webhooks/AttemptRun.ts"
import type { AttemptRecord, ClaimedDelivery } from "../../services/webhooks/Deliveries.ts"
import { makeSendAgents } from "../../services/webhooks/Sender.ts"
import type { WebhookTarget } from "../../services/webhooks/Webhooks.ts"
import { eventually } from "../support/wait.ts"
import { startReceiver } from "./receiver.ts"

/**
 * A webhook that stops (shutdown, shard moved) while a request is in flight: `sendRun` starts
 * nothing more and lets that request finish for a moment. Real receiver, real sockets.
 */

const claimed = (seq: number): ClaimedDelivery => ({
  seq,
  id: `dlv_stop_${seq}`,
  event: "ping",
  payload: JSON.stringify({ event: "ping", seq }),
  attempts: 1,
  dueAt: Date.now(),
  wasDueAt: Date.now(),
  wasClaimedAt: null,
  traceparent: null
})

const targetAt = (url: string): WebhookTarget => ({
  id: "wh_stop",
  orgId: "org_stop",
  repoId: null,
  url,
  secret: null,
  contentType: "application/json",
  isActive: true,
  maxRetries: 3,
  retryIntervalSeconds: 10,
  failingSince: null
})

/** Sends three claimed deliveries in a fiber of their own; the first request is held by the receiver. */
const startRun = (url: string) =>
  Effect.gen(function*() {
    const agents = yield* Effect.acquireRelease(Effect.sync(makeSendAgents), (agents) =>
      Effect.sync(() => agents.http.destroy()))
    const progress: RunProgress = { started: 0 }
    const done: Array<AttemptRecord> = []
    const run = sendRun(
      makeOutboundGuard({ allowPrivate: true }),
      agents,
      30_000,
      targetAt(url),
      [claimed(1), claimed(2), claimed(3)],
      [10_000, 20_000, 50_000, 90_000],
      progress,
      done
    )
    const fiber = yield* Effect.forkChild(run)
    return { fiber, progress, done }
  })

describe("a webhook stopping mid-request", () => {
  it.live("lets the request in flight finish: its success is kept and nothing more is sent", () =>
    Effect.gen(function*() {
      let answerFirst: (status: number) => void = () => {}
      const receiver = yield* startReceiver((_, index) =>
        index === 0 ? new Promise<number>((resolve) => answerFirst = resolve) : 200
      )
      const { done, fiber, progress } = yield* startRun(receiver.url())
      yield* eventually("the first request in flight", Effect.sync(() => receiver.received.length), (n) => n === 1)

      // The stop reaches the run at once (started immediately), then the receiver answers.
      const stopping = yield* Effect.forkChild(Fiber.interrupt(fiber), { startImmediately: true })
      answerFirst(200)
      yield* Fiber.join(stopping)

      expect(done.map((record) => [record.seq, record.attempt, record.status, record.response?.statusCode])).toEqual([
        [1, 1, "success", 200]
      ])
      // The caller logs `done` and gives back the claims after `progress.started`.
      expect(progress.started).toBe(0)
      expect(receiver.received).toHaveLength(1)
    }))

  it.live("abandons a request that does not finish in time: nothing is kept, its claim stands", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver(() => "hang")
      const { done, fiber, progress } = yield* startRun(receiver.url())
      yield* eventually("the first request in flight", Effect.sync(() => receiver.received.length), (n) => n === 1)

      // Returns once the grace is over and the request is cancelled (not after its 30 s timeout).
      yield* Fiber.interrupt(fiber).pipe(
        Effect.timeoutOrElse({
          duration: "20 seconds",
          orElse: () => Effect.die(new Error("the stop waited for the request's own timeout"))
        })
      )
      expect(done).toEqual([])
      expect(progress.started).toBe(0)
      expect(receiver.received).toHaveLength(1)
    }))
})
