import { PgClient } from "@effect/sql-pg"
import { expect, it, layer } from "@effect/vitest"
import { ConfigProvider, Context, Deferred, Effect, Fiber, Layer, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { CLUSTER_APPLICATION_NAME } from "../../layers/Cluster.ts"
import { GitWork } from "../../services/git/GitWork.ts"
import { startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"

class TestApp extends Context.Service<TestApp, {
  readonly sql: SqlClient.SqlClient
  readonly databaseUrl: string
}>()("test/git/ControlPlaneApp") {}
const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(startApp(), (app) => ({ sql: app.sql, databaseUrl: app.databaseUrl }))
)

const Names = Schema.Array(Schema.Struct({ application_name: Schema.String }))
const Latest = Schema.Array(Schema.Struct({ latest: Schema.NullOr(Schema.Number) }))

layer(TestAppLive, { excludeTestServices: true, timeout: "120 seconds" })("Control plane isolation", (it) => {
  it.effect("shard locks and entity messages run on the cluster's own connections, also while the request pool is full", () =>
    Effect.gen(function*() {
      const app = yield* TestApp
      // An observer with a connection of its own: the app's pool is about to be full.
      const observer = Context.get(
        yield* Layer.build(PgClient.layer({ url: Redacted.make(app.databaseUrl), maxConnections: 1 })),
        SqlClient.SqlClient
      )
      const lockHolders = observer`
        SELECT DISTINCT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database()`.pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(Names)),
        Effect.orDie
      )
      // Shard locks are held for the session; the app's own transaction-scoped advisory locks (the
      // outbox's id lock, the CI queue's claim) come and go, so read until only held locks remain.
      const holders = yield* eventually(
        "the runner's shard locks, held on the cluster's connections only",
        lockHolders,
        (rows) => rows.length > 0 && rows.every((row) => row.application_name === CLUSTER_APPLICATION_NAME)
      )
      expect(holders.map((row) => row.application_name)).toEqual([CLUSTER_APPLICATION_NAME])

      // Every connection of the request pool busy (and more requests queued behind them) ...
      const saturated = Date.now()
      const busy = yield* Effect.forkChild(
        Effect.forEach(Array.from({ length: 30 }), () => app.sql`SELECT pg_sleep(4)`, { concurrency: "unbounded" })
      )
      // ... and the cluster still runs statements (lock refreshes, message polls) meanwhile.
      const clusterActivity = observer`
        SELECT (extract(epoch FROM max(state_change)) * 1000)::float8 AS latest FROM pg_stat_activity
        WHERE application_name = ${CLUSTER_APPLICATION_NAME} AND datname = current_database()`.pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(Latest)),
        Effect.map((rows) => rows[0]?.latest ?? 0),
        Effect.orDie
      )
      yield* eventually("a cluster statement while the pool is full", clusterActivity, (at) => at > saturated + 500, {
        timeoutMs: 3_500
      })
      yield* Fiber.join(busy).pipe(Effect.orDie)
    }))
})

it.effect("heavy git work runs within the runner's budget and queues beyond it", () =>
  Effect.gen(function*() {
    const work = yield* GitWork
    let running = 0
    let most = 0
    const gates = yield* Effect.forEach(Array.from({ length: 4 }), () => Deferred.make<void>())
    const fibers = yield* Effect.forEach(gates, (gate) =>
      Effect.forkChild(work.heavy(Effect.gen(function*() {
        running++
        most = Math.max(most, running)
        yield* Deferred.await(gate)
        running--
      }))))
    yield* Effect.yieldNow
    yield* eventually("two jobs running", Effect.sync(() => running), (n) => n === 2)
    expect(yield* work.pending).toBe(4)
    for (const gate of gates) yield* Deferred.succeed(gate, undefined)
    yield* Effect.forEach(fibers, Fiber.join)
    expect(most).toBe(2)
    expect(yield* work.pending).toBe(0)
  }).pipe(
    Effect.provide(GitWork.layer),
    Effect.provideService(
      ConfigProvider.ConfigProvider,
      ConfigProvider.fromEnv({ env: { GIT_HEAVY_CONCURRENCY: "2" } })
    )
  ))
