import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import type { Duration } from "effect"
import { SqlClient } from "effect/sql"
import { Events, type EventsOptions } from "../../services/events/Events.ts"
import { Database } from "../../services/platform/Database.ts"

/**
 * A "runner": its own PgClient pool and its own Events layer (listener + reader fibers)
 * on the shared test database, living in its own scope so a test can stop it.
 */
export const startRunner = Effect.fnUntraced(function*(url: string, options?: EventsOptions) {
  const scope = yield* Scope.make()
  yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
  const layer = Events.layerWith(options).pipe(
    Layer.provideMerge(Database.layer(Redacted.make(url), { maxConnections: 6 }))
  )
  const context = yield* Layer.buildWithScope(layer, scope)
  return {
    scope,
    context,
    events: Context.get(context, Events),
    sql: Context.get(context, SqlClient.SqlClient),
    pg: Context.get(context, PgClient.PgClient),
    /** Runs an effect with this runner's services; scoped resources go into the runner's scope. */
    run: <A, E>(
      effect: Effect.Effect<A, E, Events | SqlClient.SqlClient | Scope.Scope>
    ): Effect.Effect<A, E> => effect.pipe(Effect.provideContext(context), Scope.provide(scope)),
    stop: Scope.close(scope, Exit.void)
  }
})

/**
 * Polls `condition` until it holds; fails the test after `timeout` instead of hanging. The
 * default is generous: readers stop below the horizon of the whole Postgres server, which a
 * transaction of another test file can hold back for a while.
 */
export const waitUntil = (label: string, condition: () => boolean, timeout: Duration.Input = "30 seconds") =>
  Effect.gen(function*() {
    while (!condition()) yield* Effect.sleep("20 millis")
  }).pipe(
    Effect.timeoutOrElse({
      duration: timeout,
      orElse: () => Effect.die(new Error(`timed out waiting for ${label}`))
    })
  )
