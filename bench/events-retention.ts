/**
 * `npm run bench:events-retention`: the hourly outbox retention (`pruneEvents`) on an outbox of
 * EVENTS heartbeat-like events past the retention, against one `DELETE` statement of the same
 * rows (the baseline: the least work Postgres can do for it), both on one embedded Postgres in
 * the same run. `pruneEvents` deletes in batches, each its own short transaction, because a
 * transaction holds the outbox's horizon back (`EventLog.ts`): one long `DELETE` would stall
 * every reader of new events for as long as it runs. The table also gives how many times the
 * inflow of 10,000 monitors checked every minute (167 events/s) the job keeps up with.
 *
 * Env: EVENTS (default 1,000,000), ROUNDS (default 2; each design once per round, taking turns).
 */
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { pruneEvents } from "../services/events/EventRetention.ts"
import { Database } from "../services/platform/Database.ts"
import { startEmbeddedPostgres } from "../services/platform/EmbeddedPostgres.ts"
import { printTable } from "./support.ts"

const EVENTS = Number(process.env.EVENTS ?? 1_000_000)
const ROUNDS = Number(process.env.ROUNDS ?? 2)
const INFLOW_PER_SECOND = 10_000 / 60
const DAY_MS = 24 * 60 * 60 * 1000

/** EVENTS events 8 days old in many transactions' order, one from today, a consumer at the head. */
const fill = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    yield* sql`TRUNCATE domain_events`
    yield* sql`DELETE FROM event_consumers`
    const old = new Date(Date.now() - 8 * DAY_MS).toISOString()
    for (let from = 1; from <= EVENTS; from += 100_000) {
      const to = Math.min(EVENTS, from + 99_999)
      yield* sql`
        INSERT INTO domain_events (type, org_id, data, tx, created_at)
        SELECT 'heartbeat', 'org_bench',
          jsonb_build_object('monitorId', 'mon_' || lpad((n % 10000)::text, 21, '0'), 'timestamp', ${old}::text,
            'status', 'up', 'responseTime', n % 300, 'statusCode', 200, 'region', 'default', 'attempt', 1),
          n, ${old}::timestamptz + n * interval '1 millisecond'
        FROM generate_series(${from}::bigint, ${to}::bigint) AS n`
    }
    yield* sql`INSERT INTO domain_events (type, data, tx) VALUES ('heartbeat', '{}', ${EVENTS + 1})`
    yield* sql`
      INSERT INTO event_consumers (name, last_tx, last_event_id)
      SELECT 'bench', tx, id FROM domain_events ORDER BY tx DESC, id DESC LIMIT 1`
    yield* sql`VACUUM ANALYZE domain_events`
  })

const main = Effect.gen(function*() {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-bench-retention-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(dataDir, { recursive: true, force: true })))
  const pg = yield* startEmbeddedPostgres({ dataDir })
  const context = yield* Layer.build(Database.layer(Redacted.make(pg.url), { maxConnections: 2 }))
  const sql = Context.get(context, SqlClient.SqlClient)

  const designs = {
    "pruneEvents (batches of 10,000)": () => pruneEvents(sql, { now: Date.now() }),
    "one DELETE (baseline)": () =>
      Effect.map(
        sql<{ n: string }>`
          WITH gone AS (
            DELETE FROM domain_events WHERE created_at < now() - interval '7 days' RETURNING 1
          ) SELECT count(*)::text AS n FROM gone`,
        (rows) => Number(rows[0].n)
      )
  }
  const seconds: Record<keyof typeof designs, Array<number>> = {
    "pruneEvents (batches of 10,000)": [],
    "one DELETE (baseline)": []
  }
  // The outbox's size per event, read once from the first fill.
  let bytesPerEvent = 0
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of Object.keys(designs) as Array<keyof typeof designs>) {
      yield* fill(sql)
      if (bytesPerEvent === 0) {
        const [size] = yield* sql<{ bytes: string }>`SELECT pg_total_relation_size('domain_events')::text AS bytes`
        bytesPerEvent = Number(size.bytes) / (EVENTS + 1)
      }
      const started = performance.now()
      const deleted = yield* designs[name]()
      const elapsed = (performance.now() - started) / 1000
      if (deleted !== EVENTS) return yield* Effect.die(new Error(`${name} deleted ${deleted} of ${EVENTS}`))
      seconds[name].push(elapsed)
      console.error(`[bench] ${name}: ${EVENTS} events in ${elapsed.toFixed(2)} s`)
    }
  }

  const best = (name: keyof typeof designs) => Math.min(...seconds[name])
  const baseline = EVENTS / best("one DELETE (baseline)")
  printTable((Object.keys(designs) as Array<keyof typeof designs>).map((name) => {
    const rate = EVENTS / best(name)
    return {
      design: name,
      "best of rounds, s": best(name),
      "events deleted/s": Math.round(rate),
      "× baseline": (rate / baseline).toFixed(2),
      "× inflow at 10k monitors": Math.round(rate / INFLOW_PER_SECOND)
    }
  }))
  console.log(
    `\noutbox size: ${Math.round(bytesPerEvent)} bytes per heartbeat event (table and indexes), ` +
      `${(bytesPerEvent * INFLOW_PER_SECOND * 86_400 / 1e9).toFixed(1)} GB a day at 10,000 monitors a minute`
  )
})

Effect.runPromise(Effect.scoped(main)).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
