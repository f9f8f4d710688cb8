import { Cause, Clock, Context, Effect, Fiber, Layer, Semaphore } from "effect"
import { EntityId, Sharding } from "effect/cluster"
import { Webhook } from "../../../services/webhooks/WebhookProtocol.ts"
import { sleepUntil } from "../SleepUntil.ts"

/** After a failed `Drain` (database or cluster trouble), try again this much later. */
const RETRY_AFTER_ERROR_MS = 5_000

interface AlarmState {
  /** When the armed alarm fires. */
  at: number
  /** The fiber sleeping until `at` while armed (then draining). */
  timer: Fiber.Fiber<void> | undefined
  armed: boolean
  /** A `Drain` is in flight; `again` collects wake-ups meanwhile. */
  running: boolean
  again: number | undefined
}

/**
 * Each runner's alarms for the webhooks it hosts: at most one armed alarm and one `Drain`
 * in flight per webhook. Wake-ups while a `Drain` runs collapse into one more `Drain`
 * afterwards, and the time `Drain` answers (the next due delivery) arms the next alarm.
 * The durable truth is `webhook_deliveries.next_attempt_at`; these alarms only say when to
 * look (the sweep re-arms them after a restart).
 */
export class WebhookAlarms extends Context.Service<WebhookAlarms, {
  /** Drain the webhook at `at` (ms), or earlier if already armed earlier. */
  readonly wake: (webhookId: string, at: number) => void
  /** Whether the webhook's shard is on this runner. */
  readonly hostedHere: (webhookId: string) => boolean
  readonly size: () => number
}>()("canopy/webhooks/WebhookAlarms") {
  static readonly layer = (options?: { readonly concurrency?: number | undefined }) =>
    Layer.effect(
      WebhookAlarms,
      Effect.gen(function*() {
        const sharding = yield* Sharding.Sharding
        const makeClient = yield* Webhook.client
        const clock = yield* Clock.Clock
        const permits = yield* Semaphore.make(options?.concurrency ?? 200)
        const run = Effect.runForkWith(yield* Effect.context<never>())
        const alarms = new Map<string, AlarmState>()
        const fibers = new Set<Fiber.Fiber<void>>()

        const hostedHere = (webhookId: string) => {
          const entityId = EntityId.make(webhookId)
          return sharding.hasShardId(sharding.getShardId(entityId, Webhook.getShardGroup(entityId)))
        }

        const drain = (webhookId: string) =>
          makeClient(webhookId).Drain(undefined).pipe(
            permits.withPermits(1),
            Effect.catchCause((cause) =>
              Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause as Cause.Cause<never>) : Effect.logWarning(
                "Webhook: drain failed, retrying",
                cause
              ).pipe(
                Effect.annotateLogs({ webhookId }),
                Effect.as(clock.currentTimeMillisUnsafe() + RETRY_AFTER_ERROR_MS)
              )
            )
          )

        const fire = (webhookId: string, state: AlarmState) =>
          Effect.gen(function*() {
            state.armed = false
            if (!hostedHere(webhookId)) {
              alarms.delete(webhookId)
              return
            }
            state.running = true
            const next = yield* Effect.onExit(drain(webhookId), () => Effect.sync(() => (state.running = false)))
            const again = state.again
            state.again = undefined
            const at = Math.min(next ?? Number.POSITIVE_INFINITY, again ?? Number.POSITIVE_INFINITY)
            if (Number.isFinite(at)) arm(webhookId, state, at)
            else alarms.delete(webhookId)
          })

        const arm = (webhookId: string, state: AlarmState, at: number) => {
          if (state.armed) {
            if (state.at <= at) return
            state.timer?.interruptUnsafe()
          }
          state.at = at
          state.armed = true
          // Tracked until it ends, so the layer's shutdown interrupts it (a fiber may start
          // running before `run` returns: nothing below relies on the order).
          const fiber = run(Effect.andThen(sleepUntil(clock, at), fire(webhookId, state)))
          if (state.armed && state.at === at) state.timer = fiber
          fibers.add(fiber)
          fiber.addObserver(() => fibers.delete(fiber))
        }

        const wake = (webhookId: string, at: number) => {
          let state = alarms.get(webhookId)
          if (state === undefined) {
            state = { at, timer: undefined, armed: false, running: false, again: undefined }
            alarms.set(webhookId, state)
          }
          if (state.running) state.again = Math.min(state.again ?? Number.POSITIVE_INFINITY, at)
          else arm(webhookId, state, at)
        }

        yield* Effect.addFinalizer(() =>
          Effect.sync(() => {
            for (const fiber of fibers) fiber.interruptUnsafe()
            alarms.clear()
          })
        )
        return WebhookAlarms.of({ wake, hostedHere, size: () => alarms.size })
      })
    )
}
