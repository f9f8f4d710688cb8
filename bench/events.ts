/**
 * `npm run bench:events`: publishing throughput of the outbox with one and with two runners
 * (issue 7 item 7). A "runner" is its own Postgres pool (CONNECTIONS connections) running
 * CONCURRENCY loops of check-like transactions on one embedded Postgres: read the monitor
 * row, insert a heartbeat, update the monitor, publish a `heartbeat` event (as
 * `CheckRecorder` does), commit. Each configuration runs SECONDS seconds, twice:
 *
 * - `publish lock`: the previous design, a global transaction-level advisory lock taken
 *   before the insert and held until commit (reproduced here by taking it first);
 * - `horizon`: today's `publishAll`, no lock (readers order by transaction id below the
 *   xmin horizon, `services/events/EventLog.ts`).
 *
 * A durable consumer (`consumeBatch`) runs on a third pool meanwhile and must have read
 * every committed event at the end, in `(tx, id)` order without a gap: the cursor
 * guarantee under concurrent publishers.
 *
 * Env: SECONDS (8), CONCURRENCY per runner (16), CONNECTIONS per runner (8), MONITORS (1000).
 */
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { type DomainEvent, Events, publishAll } from "../services/events/Events.ts"
import { Database } from "../services/platform/Database.ts"
import { startEmbeddedPostgres } from "../services/platform/EmbeddedPostgres.ts"
import { printTable } from "./support.ts"

const env = (name: string, fallback: number) => {
  const value = process.env[name]
  return value === undefined || value === "" ? fallback : Number(value)
}
const SECONDS = env("SECONDS", 8)
const CONCURRENCY = env("CONCURRENCY", 16)
const CONNECTIONS = env("CONNECTIONS", 8)
const MONITORS = env("MONITORS", 1000)
/** The previous design's lock key (`Events.ts` before migration 0014). */
const LEGACY_LOCK_KEY = 7_363_102_031n

type Mode = "publish lock" | "horizon"

const checkOnce = (sql: SqlClient.SqlClient, mode: Mode, monitor: number) =>
  sql.withTransaction(Effect.gen(function*() {
    const [row] = yield* sql<{ status: string }>`SELECT status FROM bench_monitors WHERE id = ${monitor}`
    yield* sql`INSERT INTO bench_heartbeats (monitor_id, status) VALUES (${monitor}, ${row.status})`
    yield* sql`UPDATE bench_monitors SET checked_at = now() WHERE id = ${monitor}`
    if (mode === "publish lock") yield* sql`SELECT pg_advisory_xact_lock(${LEGACY_LOCK_KEY})`
    yield* publishAll([{ type: "heartbeat", orgId: "org_bench", data: { monitorId: `mon_${monitor}` } }])
  })).pipe(Effect.provideService(SqlClient.SqlClient, sql))

const main = Effect.gen(function*() {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-bench-events-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(dataDir, { recursive: true, force: true })))
  const pg = yield* startEmbeddedPostgres({ dataDir })
  const url = Redacted.make(pg.url)

  const pool = Effect.fnUntraced(function*(connections: number) {
    const context = yield* Layer.build(Database.layer(url, { maxConnections: connections }))
    return Context.get(context, SqlClient.SqlClient)
  })
  const setup = yield* pool(2)
  yield* setup`CREATE TABLE bench_monitors (id integer PRIMARY KEY, status text NOT NULL, checked_at timestamptz)`
  yield* setup`CREATE TABLE bench_heartbeats (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, monitor_id integer NOT NULL, status text NOT NULL,
    checked_at timestamptz NOT NULL DEFAULT now())`
  yield* setup`INSERT INTO bench_monitors (id, status) SELECT n, 'up' FROM generate_series(1, ${MONITORS}) AS n`

  // The consumer: every event, checked for order and gaps against the table at the end.
  const consumerScope = yield* Scope.make()
  const consumerContext = yield* Layer.buildWithScope(
    Events.layer.pipe(Layer.provideMerge(Database.layer(url, { maxConnections: 4 }))),
    consumerScope
  )
  const consumed: Array<DomainEvent> = []
  yield* Context.get(consumerContext, Events).consumeBatch("bench", (events) =>
    Effect.sync(() => {
      consumed.push(...events)
    })).pipe(Scope.provide(consumerScope))

  const runners = [yield* pool(CONNECTIONS), yield* pool(CONNECTIONS)]
  const results: Array<Record<string, string | number>> = []
  let base: Record<Mode, number> = { "publish lock": 0, horizon: 0 }
  for (const mode of ["publish lock", "horizon"] as const) {
    for (const count of [1, 2]) {
      let commits = 0
      let next = 0
      const deadline = Date.now() + SECONDS * 1000
      const loop = (sql: SqlClient.SqlClient) =>
        Effect.gen(function*() {
          while (Date.now() < deadline) {
            yield* checkOnce(sql, mode, (next++ % MONITORS) + 1)
            commits++
          }
        })
      const started = performance.now()
      yield* Effect.all(
        runners.slice(0, count).flatMap((sql) => Array.from({ length: CONCURRENCY }, () => loop(sql))),
        { concurrency: "unbounded", discard: true }
      )
      const rate = commits / ((performance.now() - started) / 1000)
      if (count === 1) base = { ...base, [mode]: rate }
      results.push({
        design: mode,
        runners: String(count),
        "check transactions/s": Math.round(rate),
        "× one runner": count === 1 ? "1.00" : (rate / base[mode]).toFixed(2)
      })
      console.error(`[bench] ${mode}, ${count} runner(s): ${Math.round(rate)}/s`)
    }
  }

  // Every committed event consumed once, in (tx, id) order.
  const all = yield* setup<{ id: string }>`SELECT id::text FROM domain_events ORDER BY tx, id`
  const deadline = Date.now() + 60_000
  while (consumed.length < all.length && Date.now() < deadline) yield* Effect.sleep("100 millis")
  const inOrder = consumed.length === all.length && consumed.every((event, n) => String(event.id) === all[n].id)
  yield* Scope.close(consumerScope, Exit.void)

  printTable(results)
  console.log(
    `\nconsumer: ${consumed.length} of ${all.length} events, ${inOrder ? "all in order, none skipped" : "MISMATCH"}`
  )
  if (!inOrder) process.exitCode = 1
})

Effect.runPromise(Effect.scoped(main)).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
