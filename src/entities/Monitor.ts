import { Cause, Clock, Context, Cron, Duration, Effect, Fiber, Layer, Option, Queue, Schedule, Schema } from "effect"
import { ClusterCron, Entity, EntityId, Sharding } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { CheckRecorder, type ClaimedSlot } from "../../services/monitoring/CheckRecorder.ts"
import { Checker } from "../../services/monitoring/checks/Checker.ts"
import { currentSlot, retryFits } from "../../services/monitoring/MonitorState.ts"
import { Uptime } from "../../services/monitoring/Uptime.ts"
import { Events } from "../../services/platform/Events.ts"

/**
 * One entity per monitor, owning its schedule (GUIDE §1, §6).
 *
 * While the monitor is active the entity runs one fiber, in its own scope, that sleeps
 * (Effect `Clock`, so `TestClock` drives it) until `next_check_at`, claims that slot by
 * compare-and-swap (`CheckRecorder.claim`), runs the check, retries the same slot
 * after `retryInterval` while a failure is unconfirmed, and records each attempt in one
 * transaction (`CheckRecorder.record`). Everything durable — the next slot, the status,
 * the consecutive failures — lives in the `monitors` row, so the fiber holds nothing
 * that a restart or a shard hand-off could lose.
 *
 * Exactly once per slot: only the caller whose `UPDATE … WHERE next_check_at = <slot>`
 * matched runs the slot; a second runner (during a hand-off both may host the entity
 * for a moment) finds the row moved on and re-reads. Heartbeats are also unique per
 * (monitor, slot, attempt), so even a replayed attempt writes nothing.
 *
 * Late slots: a slot missed by a whole interval or more (downtime) is not replayed as
 * a burst; the entity checks once, at once, for the latest slot of the grid, and goes on.
 *
 * Who starts the fiber: activation of the entity (any message), `Wake`/`Reload`, and on
 * every runner a sweep (`MonitorSweeper`) that wakes, every `sweepInterval`, the active
 * monitors whose shard this runner holds but whose fiber is not running here — at start
 * (after a restart), after a shard moves to this runner, and as a safety net. Config
 * changes reach the entity as `Reload` from a durable consumer of `monitor.changed`.
 * Raw heartbeats older than 90 days are pruned daily by a cluster cron (one runner).
 *
 * The entity never passivates (`maxIdleTime` infinite): its fiber is its job. An
 * inactive monitor's entity stays resident with no fiber until the runner stops.
 */

export const MonitorInfo = Schema.Struct({
  running: Schema.Boolean,
  /** The runner hosting this entity. */
  runner: Schema.String
})

/** Ensure the schedule fiber runs (idempotent); also makes it re-read the monitor. */
export const Wake = Rpc.make("Wake")
/** The monitor's configuration changed: re-read it now (start, stop or reschedule). */
export const Reload = Rpc.make("Reload")
/** Whether the schedule fiber runs, and where (operators, tests). */
export const Inspect = Rpc.make("Inspect", { success: MonitorInfo })

export const Monitor = Entity.make("Monitor", [Wake, Reload, Inspect])

/** The monitors whose schedule fiber runs on this runner (one registry per runner). */
export class MonitorRuns extends Context.Service<MonitorRuns, {
  readonly running: Set<string>
}>()("canopy/entities/MonitorRuns") {
  static readonly layer = Layer.sync(MonitorRuns, () => ({ running: new Set<string>() }))
}

/** Logs a failure of a background step (not interruption) and lets the loop go on. */
const logFailure = (message: string, monitorId?: string) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.catchCause(self, (cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.failCause(cause as Cause.Cause<never>)
      : Effect.logWarning(message, cause).pipe(
        Effect.annotateLogs(monitorId === undefined ? {} : { monitorId }),
        Effect.andThen(Effect.fail(cause))
      ))

/**
 * The schedule loop of one monitor. Returns when the monitor is inactive or deleted.
 * `signal` wakes it early to re-read the row (Reload).
 */
export const scheduleLoop = (monitorId: string, signal: Queue.Queue<void>) =>
  Effect.gen(function*() {
    const recorder = yield* CheckRecorder
    const checker = yield* Checker

    /** Waits `millis` or until signalled; true when signalled. */
    const waitOrSignal = (millis: number) =>
      millis <= 0
        ? Effect.succeed(false)
        : Effect.map(Effect.timeoutOption(Queue.take(signal), Duration.millis(millis)), Option.isSome)

    /** The checks of one claimed slot: attempt 0, then retries while a failure is unconfirmed. */
    const runSlot = Effect.fnUntraced(function*(slot: ClaimedSlot) {
      let signalled = false
      let target = slot.target
      for (let attempt = 0;; attempt++) {
        const checkedAt = yield* Clock.currentTimeMillis
        const result = yield* checker.check(target)
        // A finished check is recorded even if the entity is stopping meanwhile.
        const outcome = yield* Effect.uninterruptible(
          recorder.record({ monitorId, slotAt: slot.slotAt, attempt, checkedAt, result })
        )
        if (outcome._tag === "Skipped" || !outcome.transition.retry) return signalled
        const now = yield* Clock.currentTimeMillis
        if (!retryFits(now, slot.retryInterval, slot.nextCheckAt)) return signalled
        // Wait for the retry; a Reload meanwhile re-reads whether the monitor is still active.
        const retryAt = now + slot.retryInterval * 1000
        while (true) {
          const current = yield* Clock.currentTimeMillis
          if (!(yield* waitOrSignal(retryAt - current))) break
          signalled = true
          if (Option.isNone(yield* recorder.loadSchedule(monitorId).pipe(Effect.map(Option.filter((s) => s.active))))) {
            return signalled
          }
        }
        const fresh = yield* recorder.loadTarget(monitorId)
        if (Option.isNone(fresh)) return signalled
        target = fresh.value
      }
    })

    // What this loop last claimed: a frequency change reschedules from that slot.
    let last: { readonly slotAt: number; nextCheckAt: number; frequency: number } | undefined
    // The schedule as of the last claim; undefined → re-read the row.
    let known: { readonly nextCheckAt: number; readonly frequency: number } | undefined

    while (true) {
      if (known === undefined) {
        const loaded = yield* recorder.loadSchedule(monitorId)
        if (Option.isNone(loaded) || !loaded.value.active) return
        const schedule = loaded.value
        if (
          last !== undefined && schedule.nextCheckAt === last.nextCheckAt && schedule.frequency !== last.frequency
        ) {
          // Frequency changed: the next check is due one new interval after the last slot.
          const next = last.slotAt + schedule.frequency * 1000
          const moved = yield* recorder.reschedule({ monitorId, expected: last.nextCheckAt, next })
          if (moved) {
            last.nextCheckAt = next
            last.frequency = schedule.frequency
          }
          continue
        }
        known = { nextCheckAt: schedule.nextCheckAt, frequency: schedule.frequency }
      }
      const now = yield* Clock.currentTimeMillis
      if (known.nextCheckAt > now) {
        if (yield* waitOrSignal(known.nextCheckAt - now)) {
          known = undefined
          continue
        }
      }
      const start = yield* Clock.currentTimeMillis
      const slotAt = currentSlot(known.nextCheckAt, start, known.frequency)
      const claimed = yield* recorder.claim({
        monitorId,
        expected: known.nextCheckAt,
        slotAt,
        frequency: known.frequency
      })
      if (Option.isNone(claimed)) {
        // Another runner took the slot, or the row changed: re-read.
        known = undefined
        continue
      }
      const slot = claimed.value
      last = { slotAt, nextCheckAt: slot.nextCheckAt, frequency: slot.frequency }
      const signalled = yield* runSlot(slot)
      known = signalled || slot.frequency !== known.frequency
        ? undefined
        : { nextCheckAt: slot.nextCheckAt, frequency: slot.frequency }
    }
  }).pipe(
    logFailure("Monitor: schedule loop failed, restarting", monitorId),
    Effect.retry(Schedule.spaced("5 seconds"))
  )

export const MonitorEntityLayer = Monitor.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const runner = yield* Entity.CurrentRunnerAddress
    const runs = yield* MonitorRuns
    // The build's own context: handlers may run in a fiber that inherited the sender's
    // services (a local send from inside a transaction carries that transaction), and the
    // schedule fiber must not inherit those.
    const context = yield* Effect.context<CheckRecorder | Checker>()
    const scope = yield* Effect.scope
    const monitorId = address.entityId
    const runnerName = `${runner.host}:${runner.port}`
    const signal = yield* Queue.sliding<void>(1)
    let fiber: Fiber.Fiber<void, unknown> | undefined

    const running = () => fiber !== undefined && fiber.pollUnsafe() === undefined

    const loop = Effect.acquireUseRelease(
      Effect.sync(() => runs.running.add(monitorId)),
      () => scheduleLoop(monitorId, signal),
      () => Effect.sync(() => runs.running.delete(monitorId))
    ).pipe(Effect.setContext(context))

    const ensureRunning = Effect.suspend(() => {
      if (running()) {
        Queue.offerUnsafe(signal, undefined)
        return Effect.void
      }
      // A stale signal must not cut the new fiber's first sleep short.
      Queue.takeUnsafe(signal)
      return Effect.asVoid(Effect.tap(Effect.forkIn(loop, scope), (forked) =>
        Effect.sync(() => {
          fiber = forked
        })))
    })

    yield* ensureRunning

    return Monitor.of({
      Wake: () => ensureRunning,
      Reload: () => ensureRunning,
      Inspect: () => Effect.sync(() => ({ running: running(), runner: runnerName }))
    })
  }),
  { maxIdleTime: Duration.infinity }
)

const STARTUP_SWEEPS = 10

export interface MonitorSchedulingOptions {
  /** How often each runner wakes the active monitors it hosts but does not run. Default 10 s. */
  readonly sweepInterval?: Duration.Input | undefined
  /** Concurrent `Wake` sends of one sweep. Default 200. */
  readonly wakeConcurrency?: number | undefined
}

/**
 * Per runner: wakes the active monitors whose shard this runner holds and whose schedule
 * fiber is not running here. Covers the start of a runner (schedules resume after a
 * restart within `sweepInterval` plus activation time), shards arriving from another
 * runner, monitors activated without an event, and any fiber that stopped.
 */
export const MonitorSweeper = (options?: MonitorSchedulingOptions) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const sharding = yield* Sharding.Sharding
    const recorder = yield* CheckRecorder
    const runs = yield* MonitorRuns
    const makeClient = yield* Monitor.client
    const interval = Duration.fromInputUnsafe(options?.sweepInterval ?? "10 seconds")
    const concurrency = options?.wakeConcurrency ?? 200

    const hostedHere = (id: string) => {
      const entityId = EntityId.make(id)
      return sharding.hasShardId(sharding.getShardId(entityId, Monitor.getShardGroup(entityId)))
    }

    const sweep = Effect.gen(function*() {
      const ids = yield* recorder.activeMonitorIds
      const idle = ids.filter((id) => !runs.running.has(id) && hostedHere(id))
      yield* Effect.forEach(
        idle,
        (id) => makeClient(id).Wake(undefined, { discard: true }).pipe(Effect.ignore),
        { concurrency, discard: true }
      )
    }).pipe(logFailure("Monitor: wake-up sweep failed"), Effect.ignore)

    // Shards are acquired in the background after start: sweep every second for the first
    // seconds (a restart resumes promptly), then every `interval`.
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
 * A durable consumer of `monitor.changed` events: sends `Reload` to the monitor's
 * entity (wherever it runs) so changes of frequency, target or `active` take effect
 * at the next check. Failed sends are dropped — the sweep is the safety net.
 */
export const MonitorChangeConsumer = Layer.effectDiscard(Effect.gen(function*() {
  const events = yield* Events
  const makeClient = yield* Monitor.client
  yield* events.consume(
    "monitor-entities",
    (event) => {
      const data = event.data as { readonly monitorId?: unknown } | null
      const monitorId = data?.monitorId
      if (typeof monitorId !== "string") return Effect.void
      return makeClient(monitorId).Reload(undefined, { discard: true }).pipe(
        Effect.timeout("5 seconds"),
        Effect.ignore
      )
    },
    { types: ["monitor.changed"], from: "now" }
  )
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

/** The monitor entity, the wake-up sweep, the change consumer and retention, with their services. */
export const MonitorSchedulingLive = (options?: MonitorSchedulingOptions) =>
  Layer.mergeAll(MonitorEntityLayer, MonitorSweeper(options), MonitorChangeConsumer, HeartbeatRetentionCron).pipe(
    Layer.provideMerge(MonitorRuns.layer)
  )
