import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Scope } from "effect"
import * as GroupCommit from "../../services/platform/GroupCommit.ts"

/**
 * The group commit behind the monitor checks' claims and records: inputs submitted while a
 * write runs go together in the next one, one input per key and write, and one bad input
 * fails only its own caller.
 */

interface Input {
  readonly key: string
  readonly value: number
}

/** Yields until `condition` holds (fibers of this test only: a few scheduler turns). */
const until = (condition: () => boolean) =>
  Effect.gen(function*() {
    for (let turn = 0; !condition(); turn++) {
      if (turn > 1000) return yield* Effect.die(new Error("condition never held"))
      yield* Effect.yieldNow
    }
  })

/** A writer that records each batch and doubles the values; `gate` holds the first write open. */
const setup = (options?: { readonly failOn?: number }) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const batches: Array<ReadonlyArray<Input>> = []
    const gate = yield* Deferred.make<void>()
    const submit = yield* GroupCommit.make<Input, number, string>({
      key: (input) => input.key,
      write: (inputs) =>
        Effect.gen(function*() {
          batches.push(inputs)
          if (batches.length === 1) yield* Deferred.await(gate)
          if (inputs.some((input) => input.value === options?.failOn)) return yield* Effect.fail("bad input")
          return inputs.map((input) => input.value * 2)
        }),
      maxBatch: 100
    }).pipe(Scope.provide(scope))
    return { submit, batches, gate, scope }
  })

describe("GroupCommit", () => {
  it.effect("inputs submitted while a write runs share the next write; each caller gets its own output", () =>
    Effect.gen(function*() {
      const { batches, gate, submit } = yield* setup()
      const first = yield* Effect.forkChild(submit({ key: "a", value: 1 }))
      yield* until(() => batches.length === 1)
      // Ten more while the first write is held open.
      let submitted = 0
      const rest = yield* Effect.forkChild(
        Effect.forEach(
          Array.from({ length: 10 }, (_, i) => ({ key: `k${i}`, value: i + 10 })),
          (input) => Effect.andThen(Effect.sync(() => submitted++), submit(input)),
          { concurrency: "unbounded" }
        )
      )
      yield* until(() => submitted === 10)
      yield* Deferred.succeed(gate, undefined)
      expect(yield* Fiber.join(first)).toBe(2)
      expect(yield* Fiber.join(rest)).toEqual(Array.from({ length: 10 }, (_, i) => (i + 10) * 2))
      expect(batches.map((batch) => batch.length)).toEqual([1, 10])
    }))

  it.effect("two inputs of one key never share a write, and keep their order", () =>
    Effect.gen(function*() {
      const { batches, gate, submit } = yield* setup()
      yield* Deferred.succeed(gate, undefined)
      const outputs = yield* Effect.forEach(
        [{ key: "a", value: 1 }, { key: "b", value: 2 }, { key: "a", value: 3 }],
        submit,
        { concurrency: "unbounded" }
      )
      expect(outputs).toEqual([2, 4, 6])
      for (const batch of batches) expect(new Set(batch.map((input) => input.key)).size).toBe(batch.length)
      const order = batches.flat().filter((input) => input.key === "a").map((input) => input.value)
      expect(order).toEqual([1, 3])
    }))

  it.effect("a failed write is retried input by input: only the bad input's caller fails", () =>
    Effect.gen(function*() {
      const { gate, submit } = yield* setup({ failOn: 13 })
      yield* Deferred.succeed(gate, undefined)
      const exits = yield* Effect.forEach(
        [11, 12, 13, 14].map((value) => ({ key: `k${value}`, value })),
        (input) => Effect.exit(submit(input)),
        { concurrency: "unbounded" }
      )
      expect(exits.map((exit) => Exit.isSuccess(exit) ? exit.value : "failed")).toEqual([22, 24, "failed", 28])
    }))

  it.effect("closing the scope interrupts the callers still waiting", () =>
    Effect.gen(function*() {
      const { batches, scope, submit } = yield* setup()
      // Its write is held open when the scope closes.
      const waiting = yield* Effect.forkChild(submit({ key: "a", value: 1 }))
      yield* until(() => batches.length === 1)
      yield* Scope.close(scope, Exit.void)
      const exit = yield* Fiber.await(waiting)
      expect(Exit.isFailure(exit) && Exit.hasInterrupts(exit)).toBe(true)
    }))
})
