import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Exit, Scope } from "effect"
import { Sharding, TestRunner } from "effect/cluster"
import { TestClock } from "effect/testing"
import * as RunnerAlarms from "../../src/entities/RunnerAlarms.ts"
import { eventually } from "../support/wait.ts"

/**
 * The runner-alarm primitive behind the monitor, pull request and webhook schedules, under
 * TestClock: `adjust` waits for the fibers it wakes (and those they fork) to suspend, so
 * what fired is known right after it.
 */

interface Fired {
  readonly key: string
  readonly value: string
  readonly now: number
}

/** Alarms in a scope of their own, recording what fires; `hosted` decides who is hosted here. */
const setup = (options?: { readonly hosted?: (key: string) => boolean; readonly concurrency?: number }) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const fired: Array<Fired> = []
    const alarms = yield* RunnerAlarms.make<string>({
      hosted: options?.hosted ?? (() => true),
      concurrency: options?.concurrency,
      fire: (key, value, now) => Effect.sync(() => fired.push({ key, value, now }))
    }).pipe(Scope.provide(scope))
    return { alarms, fired, scope, start: yield* Clock.currentTimeMillis }
  })

describe("RunnerAlarms (TestClock)", () => {
  it.effect("fires each key at its time, earliest first, once", () =>
    Effect.gen(function*() {
      const { alarms, fired, start } = yield* setup()
      alarms.set("late", start + 60_000, "L")
      alarms.set("early", start + 1_000, "E")
      expect(alarms.size()).toBe(2)
      expect(alarms.get("early")).toMatchObject({ at: start + 1_000, value: "E" })

      yield* TestClock.adjust(999)
      expect(fired).toEqual([])
      yield* TestClock.adjust(1)
      expect(fired).toEqual([{ key: "early", value: "E", now: start + 1_000 }])
      expect(alarms.get("early")).toBeUndefined()
      expect(alarms.size()).toBe(1)

      yield* TestClock.adjust("1 minute")
      expect(fired.map((f) => [f.key, f.now])).toEqual([["early", start + 1_000], ["late", start + 60_000]])
      expect(alarms.size()).toBe(0)
      yield* TestClock.adjust("1 hour")
      expect(fired).toHaveLength(2)
    }))

  it.effect("a timer armed earlier than the one the fiber sleeps for wakes it", () =>
    Effect.gen(function*() {
      const { alarms, fired, start } = yield* setup()
      alarms.set("a", start + 3_600_000, "hour")
      yield* TestClock.adjust(10)
      alarms.set("b", start + 500, "soon")
      yield* TestClock.adjust(490)
      expect(fired).toEqual([{ key: "b", value: "soon", now: start + 500 }])
    }))

  it.effect("set replaces the key's timer (earlier or later) and cancel removes it", () =>
    Effect.gen(function*() {
      const { alarms, fired, start } = yield* setup()
      alarms.set("moved-later", start + 1_000, "old")
      alarms.set("moved-later", start + 5_000, "new")
      alarms.set("moved-earlier", start + 9_000, "old")
      alarms.set("moved-earlier", start + 2_000, "new")
      alarms.set("cancelled", start + 1_500, "x")
      alarms.cancel("cancelled")
      expect(alarms.size()).toBe(2)
      expect(alarms.get("cancelled")).toBeUndefined()

      yield* TestClock.adjust("10 seconds")
      expect(fired.map((f) => [f.key, f.value, f.now - start])).toEqual([
        ["moved-earlier", "new", 2_000],
        ["moved-later", "new", 5_000]
      ])
    }))

  it.effect("a key re-armed many times far ahead fires once, at its last time", () =>
    Effect.gen(function*() {
      const { alarms, fired, start } = yield* setup()
      alarms.set("other", start + 1_000, "o")
      // Past the heap's compaction threshold: the replaced timers must not fire, and the
      // timers armed before the compaction must still fire.
      for (let i = 1; i <= 5_000; i++) alarms.set("busy", start + 86_400_000 + i, `v${i}`)
      expect(alarms.size()).toBe(2)
      yield* TestClock.adjust("2 days")
      expect(fired.map((f) => [f.key, f.value, f.now - start])).toEqual([
        ["other", "o", 1_000],
        ["busy", "v5000", 86_405_000]
      ])
    }))

  it.effect("a due key no longer hosted here is dropped without firing", () =>
    Effect.gen(function*() {
      const away = new Set<string>()
      const { alarms, fired, start } = yield* setup({ hosted: (key) => !away.has(key) })
      alarms.set("moved", start + 1_000, "m")
      alarms.set("stays", start + 1_000, "s")
      away.add("moved")
      yield* TestClock.adjust("1 second")
      expect(fired.map((f) => f.key)).toEqual(["stays"])
      expect(alarms.get("moved")).toBeUndefined()
      expect(alarms.size()).toBe(0)
      // Hosted here again later: only a new `set` (the sweep's) arms it.
      away.delete("moved")
      yield* TestClock.adjust("1 hour")
      expect(fired.map((f) => f.key)).toEqual(["stays"])
    }))

  it.effect("at most `concurrency` fired effects run at a time; the others wait their turn", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const release = yield* Deferred.make<void>()
      let running = 0
      let most = 0
      let done = 0
      const alarms = yield* RunnerAlarms.make<void>({
        hosted: () => true,
        concurrency: 2,
        fire: () =>
          Effect.gen(function*() {
            running++
            most = Math.max(most, running)
            yield* Deferred.await(release)
            running--
            done++
          })
      }).pipe(Scope.provide(scope))
      const start = yield* Clock.currentTimeMillis
      for (const key of ["a", "b", "c", "d", "e"]) alarms.set(key, start + 100, undefined)
      yield* TestClock.adjust(100)
      expect(running).toBe(2)
      yield* Deferred.succeed(release, undefined)
      yield* eventually("all fired", Effect.sync(() => done), (n) => n === 5)
      expect(most).toBe(2)
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("closing the scope interrupts running fired effects and forgets every timer", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const interrupted: Array<string> = []
      const fired: Array<string> = []
      const alarms = yield* RunnerAlarms.make<void>({
        hosted: () => true,
        fire: (key) =>
          Effect.sync(() => fired.push(key)).pipe(
            Effect.andThen(Effect.never),
            Effect.onInterrupt(() => Effect.sync(() => interrupted.push(key)))
          )
      }).pipe(Scope.provide(scope))
      const start = yield* Clock.currentTimeMillis
      alarms.set("running", start + 100, undefined)
      alarms.set("pending", start + 10_000, undefined)
      yield* TestClock.adjust(100)
      expect(fired).toEqual(["running"])

      yield* Scope.close(scope, Exit.void)
      expect(interrupted).toEqual(["running"])
      expect(alarms.size()).toBe(0)
      // Nothing fires after shutdown, armed before it or after.
      alarms.set("late", start + 200, undefined)
      yield* TestClock.adjust("1 minute")
      expect(fired).toEqual(["running"])
      expect(alarms.size()).toBe(0)
    }))
})

describe("hostedHere", () => {
  it.effect("is true for an entity of a shard group this runner holds, false for another group's", () =>
    Effect.gen(function*() {
      const sharding = yield* Sharding.Sharding
      const held = { getShardGroup: () => "default" }
      const other = { getShardGroup: () => "elsewhere" }
      const here = yield* RunnerAlarms.hostedHere(held)
      const there = yield* RunnerAlarms.hostedHere(other)
      // Shards are acquired in the background after start.
      yield* eventually("shards acquired", Effect.sync(() => here("mon_1")), (hosted) => hosted)
      expect(RunnerAlarms.shardOf(sharding, held)("mon_1").group).toBe("default")
      expect(["mon_2", "pr_1", "wh_1"].map(here)).toEqual([true, true, true])
      expect(["mon_1", "pr_1"].map(there)).toEqual([false, false])
    }).pipe(Effect.provide(TestRunner.layer)))
})
