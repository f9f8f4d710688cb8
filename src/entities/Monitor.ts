import {
  Cause,
  Clock,
  Context,
  Cron,
  Duration,
  Effect,
  Layer,
  Option,
  Queue,
  Schema,
  Scope,
  Semaphore,
  Stream
} from "effect"
import { ClusterCron, Entity, EntityId, Sharding } from "effect/cluster"
import { identity } from "effect/Function"
import { Rpc } from "effect/rpc"
import type { SqlError } from "effect/sql/SqlError"
import { CheckRecorder, type MonitorSchedule } from "../../services/monitoring/CheckRecorder.ts"
import { Checker, type CheckTarget } from "../../services/monitoring/checks/Checker.ts"
import { currentSlot, retryFits } from "../../services/monitoring/MonitorState.ts"
import { Uptime } from "../../services/monitoring/Uptime.ts"
import { Events } from "../../services/platform/Events.ts"

/**
 * One entity per monitor, owning its schedule (GUIDE §1, §6).
 *
 * The entity decides everything about its checks: when the next slot is, claiming it,
 * running the check, retrying an unconfirmed failure after `retryInterval`, recording
 * each attempt (one transaction, `CheckRecorder.record`) and rescheduling when the
 * frequency changes. Everything durable — the next slot, the status, the consecutive
 * failures — lives in the `monitors` row, so nothing is lost with the entity.
 *
 * Between checks the entity does not stay resident: it leaves an alarm (its next slot,
 * or its next retry) with its runner's `MonitorAlarms` and passivates. An alarm is a
 * heap entry of a few dozen bytes, where a resident entity with a sleeping fiber costs
 * about 30 KB (measured): 10,000 monitors would need ~300 MB of heap for sleeping alone.
 * One fiber per runner sleeps (Effect `Clock`, so `TestClock` drives it) until the
 * earliest alarm and sends it to the entity (`Check` / `Retry`), which is re-activated
 * for the check and passivated again `maxIdleTime` after it.
 *
 * Exactly once per slot: `Check` claims the slot by compare-and-swap on
 * `monitors.next_check_at` (`CheckRecorder.claim`); only the caller whose update matched
 * runs the check. Two runners — during a shard hand-off both may act for a monitor for
 * a moment, a stale alarm may fire — cannot both win. Heartbeats are also unique per
 * (monitor, slot, attempt), so even a replayed attempt writes nothing.
 *
 * Late slots: a slot missed by a whole interval or more (downtime) is not replayed as a
 * burst; the entity checks once, at once, for the latest slot of the grid, and goes on.
 *
 * Arming alarms: the entity re-arms itself after every claim and attempt; `Wake` and
 * `Reload` (sent on `monitor.changed` events) re-read the row (start, stop, or
 * reschedule after a frequency change); and on every runner a sweep (`MonitorSweeper`)
 * arms, every `sweepInterval` (every second for the first ten seconds after start), the
 * active monitors whose shard this runner holds and which have no alarm here (or one for
 * another slot than the row's) — after a restart, after shards move to this runner, and
 * as a safety net. So after a restart, checks resume as soon as the runner holds its
 * shards (about a second), whatever happened meanwhile. An alarm whose monitor is no
 * longer hosted here is dropped when it fires.
 *
 * Raw heartbeats older than 90 days are pruned daily by a cluster cron (one runner).
 */

// ---------------------------------------------------------------------------
// Protocol
// ---------------------------------------------------------------------------

export const MonitorInfo = Schema.Struct({
  /** An alarm (next slot or retry) is armed on the hosting runner. */
  running: Schema.Boolean,
  /** The runner hosting this entity. */
  runner: Schema.String
})

/** Re-read the monitor and arm its next check (idempotent). */
export const Wake = Rpc.make("Wake")
/** The monitor's configuration changed: re-read it (start, stop, reschedule). */
export const Reload = Rpc.make("Reload")
/** The slot the entity last saw as `next_check_at` is due: claim it and check. */
export const Check = Rpc.make("Check", {
  payload: { expected: Schema.Number, frequency: Schema.Number }
})
/** Another attempt of a claimed slot whose failure is not confirmed yet. */
export const Retry = Rpc.make("Retry", {
  payload: {
    slotAt: Schema.Number,
    attempt: Schema.Number,
    nextCheckAt: Schema.Number,
    frequency: Schema.Number,
    retryInterval: Schema.Number
  }
})
/** Whether the schedule is armed, and where (operators, tests). */
export const Inspect = Rpc.make("Inspect", { success: MonitorInfo })

export const Monitor = Entity.make("Monitor", [Wake, Reload, Check, Retry, Inspect])

// ---------------------------------------------------------------------------
// Alarms: one timer per runner for all the monitors it hosts
// ---------------------------------------------------------------------------

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

interface HeapEntry {
  readonly at: number
  readonly seq: number
  readonly monitorId: string
}

/** A binary min-heap on (at, seq) with lazy deletion (stale entries are skipped). */
class AlarmHeap {
  private readonly items: Array<HeapEntry> = []
  get size() {
    return this.items.length
  }
  peek(): HeapEntry | undefined {
    return this.items[0]
  }
  private less(a: HeapEntry, b: HeapEntry) {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq)
  }
  push(entry: HeapEntry) {
    const items = this.items
    items.push(entry)
    let i = items.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!this.less(items[i], items[parent])) break
      ;[items[i], items[parent]] = [items[parent], items[i]]
      i = parent
    }
  }
  pop(): HeapEntry | undefined {
    const items = this.items
    const top = items[0]
    const last = items.pop()
    if (items.length > 0 && last !== undefined) {
      items[0] = last
      let i = 0
      while (true) {
        const left = 2 * i + 1
        const right = left + 1
        let smallest = i
        if (left < items.length && this.less(items[left], items[smallest])) smallest = left
        if (right < items.length && this.less(items[right], items[smallest])) smallest = right
        if (smallest === i) break
        ;[items[i], items[smallest]] = [items[smallest], items[i]]
        i = smallest
      }
    }
    return top
  }
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
}>()("canopy/entities/MonitorAlarms") {
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

// ---------------------------------------------------------------------------
// The entity
// ---------------------------------------------------------------------------

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
          const wanted = Option.isSome(last) ? last.value + schedule.frequency * 1000 : undefined
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

// ---------------------------------------------------------------------------
// Sweep, change consumer, retention
// ---------------------------------------------------------------------------

const STARTUP_SWEEPS = 10

export interface MonitorSchedulingOptions {
  /** How often each runner arms the active monitors it hosts but has no alarm for. Default 10 s. */
  readonly sweepInterval?: Duration.Input | undefined
}

/**
 * Per runner: arms an alarm for each active monitor whose shard this runner holds and
 * which has none here (or one for another slot than its row's) — at start (schedules resume after a restart within a second or
 * two of the shards being acquired), when shards arrive from another runner, for
 * monitors activated without an event, and after any lost alarm. Arming needs no entity
 * activation: the entity is activated when the alarm fires.
 */
export const MonitorSweeper = (options?: MonitorSchedulingOptions) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const sharding = yield* Sharding.Sharding
    const recorder = yield* CheckRecorder
    const alarms = yield* MonitorAlarms
    const interval = Duration.fromInputUnsafe(options?.sweepInterval ?? "10 seconds")

    const hostedHere = (id: string) => {
      const entityId = EntityId.make(id)
      return sharding.hasShardId(sharding.getShardId(entityId, Monitor.getShardGroup(entityId)))
    }

    const sweep = Effect.gen(function*() {
      const schedules = yield* recorder.activeSchedules
      for (const schedule of schedules) {
        const current = alarms.entry(schedule.id)
        // Missing, or a slot alarm for another slot than the row's (left from an earlier
        // stay of the shard on this runner, or a change whose event was missed).
        const stale = current !== undefined && !current.inFlight && current.alarm.kind === "slot" &&
          current.alarm.expected !== schedule.nextCheckAt
        if ((current === undefined || stale) && hostedHere(schedule.id)) {
          alarms.set(schedule.id, schedule.nextCheckAt, {
            kind: "slot",
            expected: schedule.nextCheckAt,
            frequency: schedule.frequency
          })
        }
      }
    }).pipe(
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.failCause(cause)
          : Effect.logWarning("Monitor: sweep failed", cause)
      )
    )

    // Shards are acquired in the background after start: sweep every second at first.
    yield* Effect.gen(function*() {
      for (let i = 0; i < STARTUP_SWEEPS; i++) {
        yield* sweep
        yield* Effect.sleep("1 second")
      }
      while (true) {
        yield* sweep
        yield* Effect.sleep(interval)
      }
    }).pipe(Effect.forkScoped)
  }))

/**
 * Listens to `monitor.changed` on this runner's live event stream (every runner sees every
 * event) and sends `Reload` to the monitors hosted here, so changes of frequency, target or
 * `active` take effect at the next check. Live, not a durable consumer: a durable consumer
 * is woken by every committed event — one `heartbeat` per check — and would run a
 * transaction each time; the live reader runs anyway. An event missed (before start,
 * during a hand-off, on overflow) changes nothing durable: claims re-read the row, an
 * inactive monitor's claim fails and cancels its alarm, and the sweep arms new ones.
 */
export const MonitorChangeListener = Layer.effectDiscard(Effect.gen(function*() {
  const events = yield* Events
  const sharding = yield* Sharding.Sharding
  const makeClient = yield* Monitor.client
  const hostedHere = (id: string) => {
    const entityId = EntityId.make(id)
    return sharding.hasShardId(sharding.getShardId(entityId, Monitor.getShardGroup(entityId)))
  }
  const listen = events.live.pipe(
    Stream.runForEach((event) => {
      if (event.type !== "monitor.changed") return Effect.void
      const data = event.data as { readonly monitorId?: unknown } | null
      const monitorId = data?.monitorId
      if (typeof monitorId !== "string" || !hostedHere(monitorId)) return Effect.void
      return makeClient(monitorId).Reload(undefined, { discard: true }).pipe(
        Effect.timeout("5 seconds"),
        Effect.ignore
      )
    }),
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause)
        : Effect.logWarning("Monitor: change listener restarting", cause).pipe(
          Effect.andThen(Effect.sleep("1 second"))
        )
    ),
    Effect.forever
  )
  yield* Effect.forkScoped(listen)
}))

/** Raw heartbeats are kept this many days; hourly rollups are kept (uptime does not change). */
export const HEARTBEAT_RETENTION_DAYS = 90

/** Daily heartbeat retention on one runner of the cluster (03:17 UTC). */
export const HeartbeatRetentionCron = ClusterCron.make({
  name: "monitoring/PruneHeartbeats",
  cron: Cron.parseUnsafe("17 3 * * *"),
  execute: Effect.gen(function*() {
    const uptime = yield* Uptime
    const deleted = yield* uptime.pruneHeartbeats(HEARTBEAT_RETENTION_DAYS)
    yield* Effect.logInfo(`Pruned ${deleted} heartbeats older than ${HEARTBEAT_RETENTION_DAYS} days`)
  })
})

/** The monitor entity, its alarms, the sweep, the change consumer and retention. */
export const MonitorSchedulingLive = (options?: MonitorSchedulingOptions) =>
  Layer.mergeAll(MonitorEntityLayer, MonitorSweeper(options), MonitorChangeListener, HeartbeatRetentionCron).pipe(
    Layer.provideMerge(MonitorAlarms.layer())
  )
