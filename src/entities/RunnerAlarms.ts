import { Clock, Duration, Effect, Queue, Scope, Semaphore } from "effect"
import { EntityId, type ShardId, Sharding } from "effect/cluster"
import { AlarmHeap } from "./AlarmHeap.ts"

/**
 * A runner's in-memory timers for the entities it hosts, one per key (an entity id). The
 * durable truth is always a row: these timers only say when to look, the entity re-arms
 * after each step, and a periodic sweep re-arms what a restart or a shard move lost. The
 * monitor, pull request and webhook schedules are built on it.
 */
export interface RunnerAlarms<V> {
  /** Arms the key's timer for `at` (ms on the Effect `Clock`), replacing any armed one. */
  readonly set: (key: string, at: number, value: V) => void
  readonly cancel: (key: string) => void
  /** The armed timer (until it fires, is cancelled or replaced). */
  readonly get: (key: string) => { readonly at: number; readonly value: V } | undefined
  /** How many timers are armed. */
  readonly size: () => number
}

export interface RunnerAlarmsOptions<V> {
  /**
   * Whether the key's entity is still hosted on this runner when its timer is due. A key
   * that is not is dropped without firing: its shard moved, and the new host's sweep arms it.
   */
  readonly hosted: (key: string) => boolean
  /**
   * Called synchronously when the key is due (its timer is already removed), in due order,
   * so the caller can note the delivery at once; the effect it returns runs in a fiber of
   * its own, at most `concurrency` at a time, and is interrupted when the scope closes.
   */
  readonly fire: (key: string, value: V, now: number) => Effect.Effect<void>
  /** Default: unbounded. */
  readonly concurrency?: number | undefined
}

/** Below this many heap entries, stale ones are left to surface on their own. */
const COMPACT_ABOVE = 1024

interface Armed<V> {
  readonly at: number
  readonly seq: number
  readonly value: V
}

/**
 * One fiber sleeps until the earliest timer (a min-heap with lazy deletion, so a replaced
 * or cancelled timer costs nothing until it surfaces) and fires the due ones. Timers run on
 * the Effect `Clock`, so `TestClock` drives them. Closing the scope stops the fiber,
 * interrupts the fired effects still running and forgets every timer.
 */
export const make = <V>(options: RunnerAlarmsOptions<V>): Effect.Effect<RunnerAlarms<V>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const clock = yield* Clock.Clock
    const permits = options.concurrency === undefined ? undefined : yield* Semaphore.make(options.concurrency)
    const armed = new Map<string, Armed<V>>()
    let heap = new AlarmHeap()
    const wake = yield* Queue.sliding<void>(1)
    let seq = 0
    let sleepingUntil = Number.POSITIVE_INFINITY
    let closed = false

    const loop = Effect.gen(function*() {
      while (true) {
        const now = clock.currentTimeMillisUnsafe()
        while (true) {
          const top = heap.peek()
          if (top === undefined || top.at > now) break
          heap.pop()
          const current = armed.get(top.key)
          if (current === undefined || current.seq !== top.seq) continue
          armed.delete(top.key)
          if (!options.hosted(top.key)) continue
          const effect = options.fire(top.key, current.value, now)
          yield* Effect.forkIn(permits === undefined ? effect : permits.withPermits(1)(effect), scope)
        }
        const next = heap.peek()
        sleepingUntil = next === undefined ? Number.POSITIVE_INFINITY : next.at
        if (next === undefined) yield* Queue.take(wake)
        else {
          // The delay is taken now, not from `now` above: the clock may have moved while the
          // due timers were forked (a busy runner, or `TestClock.adjust` in a test).
          yield* Effect.suspend(() =>
            Effect.timeoutOption(
              Queue.take(wake),
              Duration.millis(Math.max(1, next.at - clock.currentTimeMillisUnsafe()))
            )
          )
        }
      }
    })
    yield* Effect.forkIn(loop, scope)
    yield* Scope.addFinalizer(
      scope,
      Effect.sync(() => {
        closed = true
        armed.clear()
      })
    )

    return {
      set: (key, at, value) => {
        if (closed) return
        const entry = { at, seq: ++seq, value }
        armed.set(key, entry)
        heap.push({ at, seq: entry.seq, key })
        // Replaced timers stay in the heap until they surface: rebuild it when they are most
        // of it (a key re-armed often far ahead, say a busy pull request's stale timer).
        if (heap.size > COMPACT_ABOVE && heap.size > 2 * armed.size) {
          heap = new AlarmHeap()
          for (const [key, { at, seq }] of armed) heap.push({ at, seq, key })
        }
        if (at < sleepingUntil) {
          sleepingUntil = at
          Queue.offerUnsafe(wake, undefined)
        }
      },
      cancel: (key) => {
        armed.delete(key)
      },
      get: (key) => armed.get(key),
      size: () => armed.size
    }
  })

/** An entity type (`Entity.make`), as far as locating its shards goes. */
export interface Sharded {
  readonly getShardGroup: (entityId: EntityId.EntityId) => string
}

/** The shard of the entity `id` of the entity type `entity`. */
export const shardOf = (sharding: Sharding.Sharding["Service"], entity: Sharded) => (id: string): ShardId.ShardId => {
  const entityId = EntityId.make(id)
  return sharding.getShardId(entityId, entity.getShardGroup(entityId))
}

/** Whether the entity `id` of `entity` is hosted on this runner (its shard is held here). */
export const hostedHere = (entity: Sharded): Effect.Effect<(id: string) => boolean, never, Sharding.Sharding> =>
  Effect.gen(function*() {
    const sharding = yield* Sharding.Sharding
    const shard = shardOf(sharding, entity)
    return (id: string) => sharding.hasShardId(shard(id))
  })
