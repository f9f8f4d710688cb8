import { Cause, Clock, Context, Effect, Layer } from "effect"
import { Webhook } from "../../../services/webhooks/WebhookProtocol.ts"
import * as RunnerAlarms from "../RunnerAlarms.ts"

/** After a failed `Drain` (database or cluster trouble), try again this much later. */
const RETRY_AFTER_ERROR_MS = 5_000

/**
 * Each runner's alarms for the webhooks it hosts (`RunnerAlarms`), with the webhook's own
 * rule: at most one armed alarm and one `Drain` in flight per webhook. Wake-ups while a
 * `Drain` runs collapse into one more `Drain` afterwards, and the time `Drain` answers (the
 * next due delivery) arms the next alarm. The durable truth is
 * `webhook_deliveries.next_attempt_at`; these alarms only say when to look (the sweep
 * re-arms them after a restart).
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
        const makeClient = yield* Webhook.client
        const clock = yield* Clock.Clock
        const hostedHere = yield* RunnerAlarms.hostedHere(Webhook)
        /** The webhooks whose `Drain` is in flight, with the earliest wake-up meanwhile. */
        const draining = new Map<string, { again: number | undefined }>()

        const drain = (webhookId: string) =>
          makeClient(webhookId).Drain(undefined).pipe(
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

        const timers: RunnerAlarms.RunnerAlarms<void> = yield* RunnerAlarms.make<void>({
          hosted: hostedHere,
          concurrency: options?.concurrency ?? 200,
          fire: (webhookId) => {
            const state = { again: undefined as number | undefined }
            draining.set(webhookId, state)
            return Effect.gen(function*() {
              const next = yield* Effect.onExit(drain(webhookId), () => Effect.sync(() => draining.delete(webhookId)))
              const at = Math.min(next ?? Number.POSITIVE_INFINITY, state.again ?? Number.POSITIVE_INFINITY)
              if (Number.isFinite(at)) arm(webhookId, at)
            })
          }
        })

        /** Arms the alarm for `at` unless it is armed for that time or earlier already. */
        const arm = (webhookId: string, at: number) => {
          const armed = timers.get(webhookId)
          if (armed === undefined || at < armed.at) timers.set(webhookId, at, undefined)
        }

        const wake = (webhookId: string, at: number) => {
          const running = draining.get(webhookId)
          if (running !== undefined) running.again = Math.min(running.again ?? Number.POSITIVE_INFINITY, at)
          else arm(webhookId, at)
        }

        yield* Effect.addFinalizer(() => Effect.sync(() => draining.clear()))
        return WebhookAlarms.of({ wake, hostedHere, size: () => timers.size() + draining.size })
      })
    )
}
