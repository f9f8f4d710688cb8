import { Clock, Context, Effect, Layer } from "effect"
import { Monitor } from "../../../services/monitors/MonitorProtocol.ts"
import * as RunnerAlarms from "../RunnerAlarms.ts"

/**
 * Each runner's alarms for the monitors it hosts (`RunnerAlarms`: one fiber sleeps until the
 * earliest and sends it to the monitor entity), with the monitor's own rule: a delivered
 * alarm stays "in flight" until the entity re-arms. See `MonitorScheduling.ts` for why
 * alarms live here and not in resident entities.
 */
export type Alarm =
  | { readonly kind: "slot"; readonly expected: number; readonly frequency: number }
  | {
    readonly kind: "retry"
    readonly slotAt: number
    readonly attempt: number
    readonly nextCheckAt: number
    readonly frequency: number
    readonly retryInterval: number
  }

/**
 * How long a delivered alarm counts as armed while its entity works (claim, check up to
 * the 120 s timeout, record) without re-arming; after that the sweep may arm it again.
 */
const IN_FLIGHT_MS = 150_000

/** The alarms of the monitors hosted on this runner (one per monitor: its next slot or retry). */
export class MonitorAlarms extends Context.Service<MonitorAlarms, {
  /** Arms (or replaces) the monitor's alarm. */
  readonly set: (monitorId: string, at: number, alarm: Alarm) => void
  readonly cancel: (monitorId: string) => void
  /** The armed alarm, or the one delivered less than `IN_FLIGHT_MS` ago and not yet replaced. */
  readonly get: (monitorId: string) => Alarm | undefined
  /** The alarm and whether it was delivered (in flight), as `get` sees it. */
  readonly entry: (monitorId: string) => { readonly alarm: Alarm; readonly inFlight: boolean } | undefined
  /** Forgets a delivered alarm that was not re-armed (its handler failed): the sweep re-arms it. */
  readonly release: (monitorId: string) => void
  readonly has: (monitorId: string) => boolean
  readonly size: () => number
}>()("canopy/monitors/MonitorAlarms") {
  /**
   * One fiber sleeps until the earliest alarm and sends each due alarm to its entity
   * (`Check`/`Retry`, at most `fireConcurrency` sends at a time), if the monitor is
   * still hosted on this runner.
   */
  static readonly layer = (options?: { readonly fireConcurrency?: number | undefined }) =>
    Layer.effect(
      MonitorAlarms,
      Effect.gen(function*() {
        const makeClient = yield* Monitor.client
        const clock = yield* Clock.Clock
        /** Delivered alarms (by monitor), kept until re-armed, cancelled, released or stale. */
        const inFlight = new Map<string, { readonly alarm: Alarm; readonly firedAt: number }>()

        const send = (monitorId: string, alarm: Alarm) => {
          const client = makeClient(monitorId)
          return alarm.kind === "slot"
            ? client.Check({ expected: alarm.expected, frequency: alarm.frequency }, { discard: true })
            : client.Retry({
              slotAt: alarm.slotAt,
              attempt: alarm.attempt,
              nextCheckAt: alarm.nextCheckAt,
              frequency: alarm.frequency,
              retryInterval: alarm.retryInterval
            }, { discard: true })
        }

        const timers = yield* RunnerAlarms.make<Alarm>({
          hosted: yield* RunnerAlarms.hostedHere(Monitor),
          concurrency: options?.fireConcurrency ?? 500,
          fire: (monitorId, alarm, now) => {
            // Delivered but kept as "in flight" until the entity re-arms (or cancels), so
            // the sweep does not arm the same slot again meanwhile.
            inFlight.set(monitorId, { alarm, firedAt: now })
            return send(monitorId, alarm).pipe(
              Effect.catchCause((cause) =>
                Effect.logDebug("Monitor: alarm not delivered", cause).pipe(Effect.annotateLogs({ monitorId }))
              )
            )
          }
        })
        yield* Effect.addFinalizer(() => Effect.sync(() => inFlight.clear()))

        /** The armed alarm, or the delivered one unless delivered too long ago. */
        const live = (monitorId: string): { readonly alarm: Alarm; readonly inFlight: boolean } | undefined => {
          const armed = timers.get(monitorId)
          if (armed !== undefined) return { alarm: armed.value, inFlight: false }
          const delivered = inFlight.get(monitorId)
          if (delivered === undefined) return undefined
          if (clock.currentTimeMillisUnsafe() - delivered.firedAt > IN_FLIGHT_MS) {
            inFlight.delete(monitorId)
            return undefined
          }
          return { alarm: delivered.alarm, inFlight: true }
        }

        return MonitorAlarms.of({
          set: (monitorId, at, alarm) => {
            inFlight.delete(monitorId)
            timers.set(monitorId, at, alarm)
          },
          cancel: (monitorId) => {
            inFlight.delete(monitorId)
            timers.cancel(monitorId)
          },
          get: (monitorId) => live(monitorId)?.alarm,
          entry: live,
          release: (monitorId) => {
            inFlight.delete(monitorId)
          },
          has: (monitorId) => live(monitorId) !== undefined,
          size: () => timers.size() + inFlight.size
        })
      })
    )
}
