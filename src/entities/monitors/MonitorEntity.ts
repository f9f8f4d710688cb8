import { Cause, Clock, Context, Effect, Option } from "effect"
import { Entity } from "effect/cluster"
import { identity } from "effect/Function"
import type { SqlError } from "effect/sql/SqlError"
import { count, monitorChecks, monitorLateness, observe } from "../../../services/metrics/Metrics.ts"
import { CheckRecorder, type MonitorSchedule } from "../../../services/monitors/CheckRecorder.ts"
import { Checker, type CheckTarget } from "../../../services/monitors/checks/Checker.ts"
import { Monitor } from "../../../services/monitors/MonitorProtocol.ts"
import { currentSlot, retryFits, slotAfterFrequencyChange } from "../../../services/monitors/MonitorState.ts"
import { MonitorAlarms } from "./MonitorAlarms.ts"

/**
 * Logs a failure (not an interruption) of a handler and releases the monitor's delivered
 * alarm, so the next sweep re-arms it.
 */
const logged =
  (message: string, monitorId: string, alarms: MonitorAlarms["Service"]) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
    Effect.catchCause(self, (cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause as Cause.Cause<never>)
        : Effect.logWarning(message, cause).pipe(
          Effect.annotateLogs({ monitorId }),
          Effect.andThen(Effect.sync(() => alarms.release(monitorId)))
        ))

/** How long an entity stays resident after its last message (the reaper runs every 5 s or more). */
const ENTITY_IDLE_TIME = "5 seconds"

export const MonitorEntityLayer = Monitor.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const runner = yield* Entity.CurrentRunnerAddress
    const alarms = yield* MonitorAlarms
    const recorder = yield* CheckRecorder
    const checker = yield* Checker
    const monitorId = address.entityId
    const runnerName = `${runner.host}:${runner.port}`
    // Handlers run on a fiber that may carry the sender's services: a local send from
    // inside a transaction (the change consumer's) would make our SQL join that
    // transaction. Run them in the entity's own context instead.
    const context = yield* Effect.context<never>()
    const own = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.setContext(self, context as Context.Context<R>)

    const armSlot = (schedule: { readonly nextCheckAt: number; readonly frequency: number }) =>
      alarms.set(monitorId, schedule.nextCheckAt, {
        kind: "slot",
        expected: schedule.nextCheckAt,
        frequency: schedule.frequency
      })

    /** Re-reads the row and arms the next slot; on `reload`, applies a frequency change first. */
    const plan = (reload: boolean): Effect.Effect<void, SqlError> =>
      Effect.gen(function*() {
        const loaded = yield* recorder.loadSchedule(monitorId)
        if (Option.isNone(loaded) || !loaded.value.active) {
          alarms.cancel(monitorId)
          return
        }
        let schedule: MonitorSchedule = loaded.value
        if (reload && schedule.status !== "pending") {
          // A raised frequency: the next check is due one new interval after the last
          // slot checked, not at the slot computed with the old one. (A lowered frequency
          // is moved earlier by the PATCH itself; a (re-)activated monitor — `pending` —
          // is due at once.)
          const last = yield* recorder.lastSlotAt(monitorId)
          const now = yield* Clock.currentTimeMillis
          const wanted = Option.isSome(last)
            ? slotAfterFrequencyChange(last.value, schedule.frequency, now)
            : undefined
          if (wanted !== undefined && schedule.nextCheckAt < wanted && wanted > now) {
            const moved = yield* recorder.reschedule({ monitorId, expected: schedule.nextCheckAt, next: wanted })
            if (!moved) return yield* plan(false)
            schedule = { ...schedule, nextCheckAt: wanted }
          }
        }
        // A retry of the current cycle is armed: it re-arms the slot when done.
        const armed = alarms.get(monitorId)
        if (armed?.kind === "retry" && armed.nextCheckAt === schedule.nextCheckAt) return
        armSlot(schedule)
      })

    /** One attempt of a claimed slot; arms a retry while the failure is unconfirmed. */
    const attempt = Effect.fnUntraced(function*(
      slot: {
        readonly slotAt: number
        readonly attempt: number
        readonly nextCheckAt: number
        readonly frequency: number
        readonly retryInterval: number
      },
      target: CheckTarget,
      /** Makes the check itself interruptible when the caller runs uninterruptibly. */
      interruptible: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R> = identity
    ) {
      const checkedAt = yield* Clock.currentTimeMillis
      // Interrupted mid-check (the entity moves to another runner or this one stops): hand
      // a first attempt's slot back, so the new host checks it at once instead of losing it.
      const result = yield* slot.attempt > 0 ? interruptible(checker.check(target)) : interruptible(
        checker.check(target)
      ).pipe(
        Effect.onInterrupt(() =>
          Effect.ignore(recorder.reschedule({ monitorId, expected: slot.nextCheckAt, next: slot.slotAt }))
        )
      )
      // A finished check is recorded even if the entity is stopping meanwhile.
      const outcome = yield* Effect.uninterruptible(
        recorder.record({ monitorId, slotAt: slot.slotAt, attempt: slot.attempt, checkedAt, result })
      )
      if (outcome._tag === "Recorded") {
        yield* count(monitorChecks, { type: target.checkType, result: outcome.transition.heartbeatStatus })
        // Lateness of the slot itself: retries start late on purpose.
        if (slot.attempt === 0) yield* observe(monitorLateness, Math.max(0, checkedAt - slot.slotAt) / 1000)
      }
      if (outcome._tag === "Skipped" && outcome.reason === "inactive") return yield* plan(false)
      const now = yield* Clock.currentTimeMillis
      if (
        outcome._tag === "Recorded" && outcome.transition.retry &&
        retryFits(now, slot.retryInterval, slot.nextCheckAt)
      ) {
        alarms.set(monitorId, now + slot.retryInterval * 1000, { kind: "retry", ...slot, attempt: slot.attempt + 1 })
      } else {
        armSlot(slot)
      }
    })

    return Monitor.of({
      Wake: () => plan(false).pipe(logged("Monitor: wake failed", monitorId, alarms), own),
      Reload: () => plan(true).pipe(logged("Monitor: reload failed", monitorId, alarms), own),
      // From the claim on, only the check itself can be interrupted (and then hands the slot
      // back): an interruption between a committed claim and the check would lose the slot.
      Check: ({ payload }) =>
        Effect.uninterruptibleMask((restore) =>
          Effect.gen(function*() {
            const now = yield* Clock.currentTimeMillis
            if (payload.expected > now) return armSlot({ nextCheckAt: payload.expected, frequency: payload.frequency })
            const slotAt = currentSlot(payload.expected, now, payload.frequency)
            const claimed = yield* recorder.claim({
              monitorId,
              expected: payload.expected,
              slotAt,
              frequency: payload.frequency
            })
            // Another runner took the slot, or the row changed: re-read.
            if (Option.isNone(claimed)) return yield* plan(false)
            const slot = claimed.value
            armSlot(slot)
            yield* attempt(
              {
                slotAt,
                attempt: 0,
                nextCheckAt: slot.nextCheckAt,
                frequency: slot.frequency,
                retryInterval: slot.retryInterval
              },
              slot.target,
              restore
            )
          })
        ).pipe(logged("Monitor: check failed", monitorId, alarms), own),
      Retry: ({ payload }) =>
        Effect.gen(function*() {
          const target = yield* recorder.loadTarget(monitorId)
          if (Option.isNone(target)) {
            alarms.cancel(monitorId)
            return
          }
          yield* attempt(payload, target.value)
        }).pipe(logged("Monitor: retry failed", monitorId, alarms), own),
      Inspect: () => Effect.sync(() => ({ running: alarms.has(monitorId), runner: runnerName }))
    })
  }),
  { maxIdleTime: ENTITY_IDLE_TIME }
)
