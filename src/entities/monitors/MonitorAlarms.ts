import { Clock, Context, Duration, Effect, Layer, Queue, Scope, Semaphore } from "effect"
import { EntityId, Sharding } from "effect/cluster"
import { Monitor } from "../../../services/monitors/MonitorProtocol.ts"
import { AlarmHeap } from "../AlarmHeap.ts"

/**
 * Each runner's alarms for the monitors it hosts: a heap of (time, monitor) entries and one
 * fiber that sleeps until the earliest and sends it to the monitor entity. See
 * `MonitorScheduling.ts` for why alarms live here and not in resident entities.
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
        const sharding = yield* Sharding.Sharding
        const makeClient = yield* Monitor.client
        const scope = yield* Effect.scope
        const permits = yield* Semaphore.make(options?.fireConcurrency ?? 500)
        const clock = yield* Clock.Clock
        const alarms = new Map<
          string,
          { readonly at: number; readonly seq: number; readonly alarm: Alarm; firedAt?: number }
        >()
        const heap = new AlarmHeap()
        const wake = yield* Queue.sliding<void>(1)
        let seq = 0
        let sleepingUntil = Number.POSITIVE_INFINITY

        /** The monitor's entry unless it was delivered too long ago without being replaced. */
        const live = (monitorId: string) => {
          const entry = alarms.get(monitorId)
          if (entry?.firedAt !== undefined && clock.currentTimeMillisUnsafe() - entry.firedAt > IN_FLIGHT_MS) {
            alarms.delete(monitorId)
            return undefined
          }
          return entry
        }

        const hostedHere = (monitorId: string) => {
          const entityId = EntityId.make(monitorId)
          return sharding.hasShardId(sharding.getShardId(entityId, Monitor.getShardGroup(entityId)))
        }

        const fire = (monitorId: string, alarm: Alarm) => {
          const client = makeClient(monitorId)
          const send = alarm.kind === "slot"
            ? client.Check({ expected: alarm.expected, frequency: alarm.frequency }, { discard: true })
            : client.Retry({
              slotAt: alarm.slotAt,
              attempt: alarm.attempt,
              nextCheckAt: alarm.nextCheckAt,
              frequency: alarm.frequency,
              retryInterval: alarm.retryInterval
            }, { discard: true })
          return send.pipe(
            Effect.catchCause((cause) =>
              Effect.logDebug("Monitor: alarm not delivered", cause).pipe(Effect.annotateLogs({ monitorId }))
            ),
            permits.withPermits(1),
            Effect.forkIn(scope)
          )
        }

        const loop = Effect.gen(function*() {
          while (true) {
            const now = yield* Clock.currentTimeMillis
            while (true) {
              const top = heap.peek()
              if (top === undefined || top.at > now) break
              heap.pop()
              const current = alarms.get(top.monitorId)
              if (current === undefined || current.seq !== top.seq) continue
              // Shards that moved away: the new host's sweep arms the monitor there.
              if (!hostedHere(top.monitorId)) {
                alarms.delete(top.monitorId)
                continue
              }
              // Delivered but kept as "in flight" until the entity re-arms (or cancels), so
              // the sweep does not arm the same slot again meanwhile.
              current.firedAt = now
              yield* fire(top.monitorId, current.alarm)
            }
            const next = heap.peek()
            sleepingUntil = next === undefined ? Number.POSITIVE_INFINITY : next.at
            if (next === undefined) yield* Queue.take(wake)
            else yield* Effect.timeoutOption(Queue.take(wake), Duration.millis(Math.max(1, next.at - now)))
          }
        })
        yield* Effect.forkScoped(loop)
        yield* Scope.addFinalizer(scope, Effect.sync(() => alarms.clear()))

        return MonitorAlarms.of({
          set: (monitorId, at, alarm) => {
            const entry = { at, seq: ++seq, alarm }
            alarms.set(monitorId, entry)
            heap.push({ at, seq: entry.seq, monitorId })
            if (at < sleepingUntil) {
              sleepingUntil = at
              Queue.offerUnsafe(wake, undefined)
            }
          },
          cancel: (monitorId) => {
            alarms.delete(monitorId)
          },
          get: (monitorId) => live(monitorId)?.alarm,
          entry: (monitorId) => {
            const entry = live(monitorId)
            return entry === undefined ? undefined : { alarm: entry.alarm, inFlight: entry.firedAt !== undefined }
          },
          release: (monitorId) => {
            if (alarms.get(monitorId)?.firedAt !== undefined) alarms.delete(monitorId)
          },
          has: (monitorId) => live(monitorId) !== undefined,
          size: () => alarms.size
        })
      })
    )
}
