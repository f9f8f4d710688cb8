/**
 * `npm run bench:monitors`: N monitors at frequency 60 s, checked by Canopy (separate
 * processes: `src/main.ts` on a temporary Postgres) against a local HTTP target (another
 * process, `bench/bare-server.ts`), for DURATION seconds.
 *
 * Reports checks/s, schedule lateness (check start − slot time) p50/p99/max, missed
 * slots, CPU (also per check) and RSS of the Canopy processes, and Postgres' CPU. With
 * RUNNERS=2 (or more) that many runners share the database in multi-runner mode; the
 * monitors are inserted once their shards are spread, and each runner's checks, lateness,
 * CPU and RSS are reported too. The baseline, in the same run, is a bare Node process
 * scheduling the same N checks with `setTimeout` and `node:http` (no database, no
 * cluster): the floor for lateness and CPU.
 *
 * Monitors are inserted in bulk by SQL (not through the API) with their first slots
 * spread evenly over one minute, WARMUP seconds after insertion; every slot from the
 * first one for DURATION seconds is measured.
 *
 * Env: N (default 10000), DURATION seconds (default 200, ≥ 3 intervals), WARMUP (default
 * 30), RUNNERS (default 1: the single embedded-style runner; CLUSTER=1 runs one socket
 * runner instead), BASELINE=0 to skip the baseline, FIND_MAX=1 to step N up (FIND_STEPS,
 * default "10000,20000,30000,40000,50000,60000,80000") until p99 lateness reaches 1 s or a
 * slot is missed, and report the largest N that met the lateness goal; COMPARE_RUNNERS=1
 * does that for one and then two socket runners (two start at one runner's largest N) and
 * prints the ratio of their capacities and CPU per check. RUNNER_CPU (e.g. 0.3) gives each
 * runner a hard quota of that many cores (its own cgroup; Linux, root), as if each ran on a
 * small machine of its own: on a 2-core machine that is how two runners can be compared
 * with one without the second taking the CPU Postgres and the target need. PG_STATEMENTS=1
 * prints the statements that took Postgres the most time in the measured window.
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { startEmbeddedPostgres } from "../services/platform/EmbeddedPostgres.ts"
import { runBaseline } from "./monitors-baseline.ts"
import { FREQUENCY, type Lateness, meetsGoal, type Row, type RunResult, runResult, toRows } from "./monitors-results.ts"
import {
  resetStatements,
  sampleWaits,
  startRunners,
  statementSettings,
  topStatements,
  waitForShardsSpread
} from "./monitors-runners.ts"
import { sample } from "./process-usage.ts"
import { freePort, printTable, startProcess, stop } from "./support.ts"

const env = (name: string, fallback: number) => {
  const value = process.env[name]
  return value === undefined || value === "" ? fallback : Number(value)
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Postgres load counters of the current database: commits, and row writes in the cluster's tables. */
const pgCounters = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ xact: number; clusterRows: number }>`
      SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::float8 AS xact,
        (SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables
          WHERE relname IN ('cluster_messages', 'cluster_replies'))::float8 AS "clusterRows"`,
    ([row]) => row
  )

const withSql = <A>(url: string, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown, never>) =>
  Effect.runPromise(Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(PgClient.layer({ url: Redacted.make(url), maxConnections: 2 }), scope)
    const sql = Context.get(context, SqlClient.SqlClient)
    return yield* f(sql).pipe(Effect.ensuring(Scope.close(scope, Exit.void)))
  }))

/** Lateness (check start − slot) of the first attempts of slots in [from, to), optionally of one runner's region. */
const latenessOf = (sql: SqlClient.SqlClient, from: number, to: number, region?: string) =>
  Effect.map(
    sql<Lateness>`
      SELECT count(*)::int AS checks,
        coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY lateness), 0)::float8 AS p50,
        coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY lateness), 0)::float8 AS p99,
        coalesce(max(lateness), 0)::float8 AS max
      FROM (
        SELECT extract(epoch FROM checked_at - slot_at) * 1000 AS lateness FROM heartbeats
        WHERE attempt = 0 AND slot_at >= to_timestamp(${from} / 1000.0) AND slot_at < to_timestamp(${to} / 1000.0)
          ${region === undefined ? sql`` : sql`AND region = ${region}`}
      ) AS l`,
    ([row]) => row
  )

const runCanopy = async (options: {
  readonly adminUrl: string
  readonly pgDataDir: string
  readonly target: string
  readonly n: number
  readonly runners: number
  readonly cluster: boolean
  readonly seconds: number
  readonly warmup: number
  readonly coresPerRunner: number | undefined
  readonly statements: boolean
}): Promise<RunResult> => {
  const { n, seconds, warmup } = options
  const dbName = `bench_monitors_${n}_${options.runners}_${Date.now()}`
  await withSql(options.adminUrl, (sql) => sql.unsafe(`CREATE DATABASE ${dbName}`))
  const url = new URL(options.adminUrl)
  url.pathname = `/${dbName}`
  const databaseUrl = url.toString()
  const label = `N=${n} RUNNERS=${options.runners}`

  const runners = await startRunners({
    databaseUrl,
    count: options.runners,
    cluster: options.cluster,
    coresPerRunner: options.coresPerRunner
  })
  try {
    if (options.runners > 1 || options.cluster) {
      const shares = await withSql(databaseUrl, (sql) => waitForShardsSpread(sql, options.runners))
      console.error(`[bench] ${label}: shards held per runner: ${shares.join(", ")}`)
    }

    // Bulk insert: first slots spread evenly over one minute, `warmup` seconds from now.
    const start = await withSql(databaseUrl, (sql) =>
      Effect.gen(function*() {
        yield* sql`INSERT INTO organizations (id, slug, name, plan) VALUES ('org_bench', 'bench', 'Bench', 'enterprise')`
        const [{ t0 }] = yield* sql<{ t0: number }>`
          SELECT (floor(extract(epoch FROM now()) * 1000) + ${warmup * 1000})::float8 AS t0`
        yield* sql`
          INSERT INTO monitors (id, org_id, name, url, frequency, timeout, retries, next_check_at, status_since)
          SELECT 'mon_bench_' || i, 'org_bench', 'bench ' || i, ${options.target} || '/m/' || i, ${FREQUENCY}, 10, 1,
            to_timestamp((${t0} + floor(i::float8 * ${FREQUENCY * 1000} / ${n})) / 1000.0), now()
          FROM generate_series(0, ${n - 1}) AS i`
        return t0
      }))
    const end = start + seconds * 1000
    console.error(`[bench] ${label}: ${n} monitors inserted; measuring ${seconds}s from the first slot`)

    // Wait for the first slot, then sample the steady state.
    await sleep(Math.max(0, start - Date.now()))
    const statementsSince = options.statements ? await withSql(databaseUrl, resetStatements) : undefined
    const sampler = sample(runners.processes.map((p) => p.pid!), options.pgDataDir)
    const pg0 = await withSql(databaseUrl, pgCounters)
    let sampling = true
    const waits = withSql(databaseUrl, (sql) => sampleWaits(sql, () => sampling))
    while (Date.now() < end) {
      await sleep(Math.min(10_000, end - Date.now()))
      const done = Math.round((Date.now() - start) / 1000)
      if (done % 30 < 10) console.error(`[bench] ${label}: ${done}s / ${seconds}s`)
    }
    const usage = sampler.stop()
    sampling = false
    console.error(`[bench] ${label}: Postgres sessions waiting (average): ${await waits}`)
    if (statementsSince !== undefined) {
      const lines = await withSql(databaseUrl, (sql) => topStatements(sql, statementsSince))
      console.error(`[bench] ${label}: Postgres statements by time (calls/s, ms/call, % of a core):`)
      for (const line of lines) console.error(`[bench]   ${line}`)
    }
    const pg1 = await withSql(databaseUrl, pgCounters)
    const pgLoad = {
      xactPerSecond: (pg1.xact - pg0.xact) / seconds,
      clusterRowsPerSecond: (pg1.clusterRows - pg0.clusterRows) / seconds
    }
    await sleep(12_000) // checks started before `end` finish (timeout 10 s)

    const figures = await withSql(databaseUrl, (sql) =>
      Effect.gen(function*() {
        const all = yield* latenessOf(sql, start, end)
        const perRunner = runners.regions.length < 2
          ? []
          : yield* Effect.forEach(runners.regions, (region) => latenessOf(sql, start, end, region))
        const [dup] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM (
            SELECT monitor_id, slot_at FROM heartbeats WHERE attempt = 0 GROUP BY 1, 2 HAVING count(*) > 1
          ) AS d`
        if (dup.n > 0) console.error(`[bench] ${label}: ${dup.n} slots with more than one heartbeat!`)
        // The last interval alone (every monitor has exactly one slot in it): the steady state,
        // after whatever start-up costs the design has.
        const last = yield* latenessOf(sql, end - FREQUENCY * 1000, end)
        return { all: { ...all, lastChecks: last.checks, lastP99: last.p99 }, perRunner }
      }))
    const system = (options.runners > 1 ? `canopy ×${options.runners}` : options.cluster ? "canopy ×1" : "canopy") +
      (options.coresPerRunner === undefined ? "" : ` (${options.coresPerRunner} core each)`)
    return runResult(system, { n, seconds, start, end }, figures.all, figures.perRunner, { ...usage, ...pgLoad })
  } finally {
    await runners.close()
    await withSql(options.adminUrl, (sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`)).catch(
      () => undefined
    )
  }
}

type CanopyRun = (n: number, runners: number) => Promise<RunResult>

/**
 * Steps N up through `steps` until a run misses the lateness goal; the largest N that met
 * it, if any.
 */
const findMax = async (run: CanopyRun, runners: number, steps: ReadonlyArray<number>, rows: Array<Row>) => {
  let best: RunResult | undefined
  for (const step of steps) {
    const result = await run(step, runners)
    rows.push(...toRows(result))
    console.error(`[bench] N=${step} RUNNERS=${runners}: p99 ${result.p99.toFixed(0)} ms, missed ${result.missed}`)
    if (!meetsGoal(result)) break
    best = result
  }
  return best
}

const describeBest = (best: RunResult | undefined, runners: number) =>
  best === undefined
    ? `RUNNERS=${runners}: no N met the lateness goal (p99 < 1 s, no missed slot).`
    : `RUNNERS=${runners}: largest N meeting the lateness goal (p99 < 1 s, no missed slot): ${best.monitors} ` +
      `(${best.checksPerSecond.toFixed(0)} checks/s, runners ${best.cpuMsPerCheck.toFixed(2)} CPU ms/check, ` +
      `Postgres ${best.pgCpuMsPerCheck.toFixed(2)} CPU ms/check, RSS ${best.rssMiB.toFixed(0)} MiB)`

const main = async () => {
  const n = env("N", 10_000)
  const seconds = env("DURATION", 200)
  const warmup = env("WARMUP", 30)
  const runnerCount = env("RUNNERS", 1)
  const compare = process.env.COMPARE_RUNNERS === "1"
  const cluster = compare || runnerCount > 1 || process.env.CLUSTER === "1"
  const coresPerRunner = process.env.RUNNER_CPU ? Number(process.env.RUNNER_CPU) : undefined
  const statements = process.env.PG_STATEMENTS === "1"
  const steps = (process.env.FIND_STEPS ?? "10000,20000,30000,40000,50000,60000,80000").split(",").map(Number)
  const scope = Effect.runSync(Scope.make())
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-bench-"))
  Fs.chmodSync(dir, 0o755)
  const pgDataDir = Path.join(dir, "pg")
  const pg = await Effect.runPromise(
    startEmbeddedPostgres({ dataDir: pgDataDir, settings: statements ? statementSettings : undefined }).pipe(
      Scope.provide(scope)
    )
  )
  const targetPort = await freePort()
  const targetProcess = await startProcess(
    "bench/bare-server.ts",
    { PORT: String(targetPort), BODY: "ok" },
    `http://127.0.0.1:${targetPort}/`
  )
  const target = `http://127.0.0.1:${targetPort}`
  const run: CanopyRun = (monitors, runners) =>
    runCanopy({
      adminUrl: pg.url,
      pgDataDir,
      target,
      n: monitors,
      runners,
      cluster,
      seconds,
      warmup,
      coresPerRunner,
      statements
    })
  const rows: Array<Row> = []
  try {
    if (compare) {
      const one = await findMax(run, 1, steps, rows)
      // Two runners start where one stopped: the steps one runner met are not searched again.
      const from = one === undefined ? steps : steps.filter((step) => step >= one.monitors)
      const two = await findMax(run, 2, from, rows)
      printTable(rows)
      console.log(`\n${describeBest(one, 1)}\n${describeBest(two, 2)}`)
      if (one !== undefined && two !== undefined) {
        console.log(
          `Two runners / one runner: ${(two.monitors / one.monitors).toFixed(2)}× the monitors (capacity); ` +
            `CPU per check ${one.cpuMsPerCheck.toFixed(2)} → ${two.cpuMsPerCheck.toFixed(2)} ms (runners), ` +
            `${one.pgCpuMsPerCheck.toFixed(2)} → ${two.pgCpuMsPerCheck.toFixed(2)} ms (Postgres).`
        )
      }
    } else if (process.env.FIND_MAX === "1") {
      const best = await findMax(run, runnerCount, steps, rows)
      printTable(rows)
      console.log(`\n${describeBest(best, runnerCount)}`)
    } else {
      const result = await run(n, runnerCount)
      rows.push(...toRows(result))
      if (process.env.BASELINE !== "0") rows.push(...toRows(await runBaseline(target, n, Math.min(seconds, 130), 5)))
      printTable(rows)
      console.log(
        `\nGoal (p99 lateness < 1 s, RSS < 1 GiB): ${
          result.p99 < 1000 && result.rssMiB < 1024 ? "met" : "NOT met"
        }. Lateness = check start − slot time; CPU % of one core, averaged over the run; ms/check = CPU time per check.`
      )
    }
  } finally {
    await stop(targetProcess)
    await Effect.runPromise(Scope.close(scope, Exit.void))
    Fs.rmSync(dir, { recursive: true, force: true })
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
