import { Cause, Deferred, Effect, Exit, Queue, type Scope } from "effect"

/**
 * Group commit for a hot write path: callers each submit one input and wait for its own
 * result, while one writer fiber takes whatever queued while its previous write ran (1 to
 * `maxBatch` inputs) and writes them together — one statement or transaction, one commit.
 * No timer: a lone input is written at once, and the busier the process (the longer each
 * write takes), the larger the batches and the less each input costs.
 *
 * Inputs with the same `key` never share a write (a later one waits for the next round), so
 * a write may assume one input per key. A failed write of several inputs is retried with
 * each input alone, so one bad input fails only its own caller. Closing the scope interrupts
 * the callers still waiting.
 */
export const make = <I, O, E>(options: {
  /** Inputs of one key go in distinct writes, in submission order. */
  readonly key: (input: I) => string
  /** Writes the inputs (distinct keys) together; one output per input, in order. */
  readonly write: (inputs: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<O>, E>
  /** Runs after a successful write, before its callers resume (e.g. wake readers once). */
  readonly afterWrite?: ((outputs: ReadonlyArray<O>) => Effect.Effect<void>) | undefined
  readonly maxBatch: number
}): Effect.Effect<(input: I) => Effect.Effect<O, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    interface Pending {
      readonly input: I
      readonly reply: Deferred.Deferred<O, E>
    }
    const queue = yield* Queue.unbounded<Pending>()
    const pending = new Set<Pending>()
    let closed = false
    const settle = (request: Pending, exit: Exit.Exit<O, E>) => {
      pending.delete(request)
      Deferred.doneUnsafe(request.reply, exit)
    }

    const writeRound = (round: ReadonlyArray<Pending>): Effect.Effect<void> =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(options.write(round.map((request) => request.input)))
        if (exit._tag === "Success") {
          if (options.afterWrite !== undefined) yield* options.afterWrite(exit.value)
          round.forEach((request, i) => settle(request, Exit.succeed(exit.value[i])))
        } else if (round.length > 1 && !Cause.hasInterruptsOnly(exit.cause)) {
          for (const request of round) yield* writeRound([request])
        } else {
          for (const request of round) settle(request, Exit.failCause(exit.cause))
        }
      })

    yield* Effect.forkScoped(Effect.forever(Effect.gen(function*() {
      let rest: ReadonlyArray<Pending> = yield* Queue.takeBetween(queue, 1, options.maxBatch)
      while (rest.length > 0) {
        const seen = new Set<string>()
        const round: Array<Pending> = []
        const later: Array<Pending> = []
        for (const request of rest) {
          const key = options.key(request.input)
          ;(seen.has(key) ? later : round).push(request)
          seen.add(key)
        }
        yield* writeRound(round)
        rest = later
      }
    })))
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
        for (const request of pending) Deferred.doneUnsafe(request.reply, Effect.interrupt)
        pending.clear()
      })
    )

    return (input: I): Effect.Effect<O, E> =>
      Effect.suspend(() => {
        if (closed) return Effect.interrupt
        const request: Pending = { input, reply: Deferred.makeUnsafe<O, E>() }
        pending.add(request)
        Queue.offerUnsafe(queue, request)
        return Deferred.await(request.reply)
      })
  })
