/**
 * `npm run bench:monitors`: N monitors at frequency 60 s, checked by Canopy (a separate
 * process: `src/main.ts`, single embedded-style runner on a temporary Postgres) against a
 * local HTTP target (another process, `bench/bare-server.ts`), for DURATION seconds.
 *
 * Reports checks/s, schedule lateness (check start − slot time) p50/p99/max, missed
 * slots, and CPU and RSS of the Canopy process (and Postgres' CPU). The baseline, in the
 * same run, is a bare Node process scheduling the same N checks with `setTimeout` and
 * `node:http` (no database, no cluster): the floor for lateness and CPU.
 *
 * Monitors are inserted in bulk by SQL (not through the API) with their first slots
 * spread evenly over one minute, WARMUP seconds after insertion; every slot from the
 * first one for DURATION seconds is measured.
 *
 * Env: N (default 10000), DURATION seconds (default 200, ≥ 3 intervals), WARMUP (default
 * 30), BASELINE=0 to skip the baseline, FIND_MAX=1 to step N up (FIND_STEPS, default
 * "10000,20000,30000,40000,50000,60000,80000") until p99 lateness reaches 1 s or a slot
 * is missed, and report the largest N that met the lateness goal (with its RSS).
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import type { ChildProcess } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { startEmbeddedPostgres } from "../services/platform/EmbeddedPostgres.ts"
import { freePort, percentile, printTable, startProcess, stop } from "./support.ts"

const FREQUENCY = 60
const env = (name: string, fallback: number) => {
  const value = process.env[name]
  return value === undefined || value === "" ? fallback : Number(value)
}

// ---------------------------------------------------------------------------
// Process sampling (/proc)
// ---------------------------------------------------------------------------

const TICKS = 100 // USER_HZ on Linux

const cpuTicks = (pid: number): number => {
  try {
    const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return Number(fields[11]) + Number(fields[12]) // utime + stime
  } catch {
    return 0
  }
}

const rssBytes = (pid: number): number => {
  try {
    const status = Fs.readFileSync(`/proc/${pid}/status`, "utf8")
    const match = /VmRSS:\s+(\d+) kB/.exec(status)
    return match ? Number(match[1]) * 1024 : 0
  } catch {
    return 0
  }
}

/** The postmaster and its children (backends, workers) of one Postgres data directory. */
const postgresPids = (dataDir: string): Array<number> => {
  try {
    const postmaster = Number(Fs.readFileSync(Path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0])
    const pids = [postmaster]
    for (const entry of Fs.readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue
      try {
        const stat = Fs.readFileSync(`/proc/${entry}/stat`, "utf8")
        const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
        if (ppid === postmaster) pids.push(Number(entry))
      } catch {
        // gone
      }
    }
    return pids
  } catch {
    return []
  }
}

interface Sampler {
  readonly stop: () => {
    readonly cpuPercent: number
    readonly pgCpuPercent: number
    readonly rssMax: number
    readonly rssEnd: number
  }
}

/** Samples a process' CPU and RSS (and Postgres' CPU) every second. */
const sample = (pid: number, pgDataDir: string | undefined): Sampler => {
  const started = performance.now()
  const cpu0 = cpuTicks(pid)
  const pgTicks = () => pgDataDir === undefined ? 0 : postgresPids(pgDataDir).reduce((sum, p) => sum + cpuTicks(p), 0)
  const pg0 = pgTicks()
  let rssMax = rssBytes(pid)
  const timer = setInterval(() => {
    rssMax = Math.max(rssMax, rssBytes(pid))
  }, 1000)
  return {
    stop: () => {
      clearInterval(timer)
      const seconds = (performance.now() - started) / 1000
      const rssEnd = rssBytes(pid)
      return {
        cpuPercent: ((cpuTicks(pid) - cpu0) / TICKS / seconds) * 100,
        pgCpuPercent: ((pgTicks() - pg0) / TICKS / seconds) * 100,
        rssMax: Math.max(rssMax, rssEnd),
        rssEnd
      }
    }
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

// ---------------------------------------------------------------------------
// Baseline: a bare Node scheduler (child process, MODE=baseline)
// ---------------------------------------------------------------------------

const runBaselineChild = async () => {
  const n = env("N", 10_000)
  const target = process.env.TARGET!
  const start = Number(process.env.START!)
  const end = Number(process.env.END!)
  const lateness: Array<number> = []
  const lastLateness: Array<number> = []
  let checks = 0
  const check = (url: string) =>
    new Promise<void>((resolve) => {
      const request = Http.request(url, { agent: false, timeout: 10_000 }, (response) => {
        response.resume()
        response.on("end", () => resolve())
        response.on("error", () => resolve())
      })
      request.on("error", () => resolve())
      request.on("timeout", () => request.destroy())
      request.end()
    })
  const schedule = (i: number, slot: number) => {
    if (slot >= end) return
    setTimeout(() => {
      const began = Date.now()
      lateness.push(began - slot)
      if (slot >= end - FREQUENCY * 1000) lastLateness.push(began - slot)
      checks++
      void check(`${target}/m/${i}`).then(() => schedule(i, slot + FREQUENCY * 1000))
    }, Math.max(0, slot - Date.now()))
  }
  for (let i = 0; i < n; i++) schedule(i, start + Math.floor((i * FREQUENCY * 1000) / n))
  while (Date.now() < end + 5_000) await sleep(500)
  lateness.sort((a, b) => a - b)
  lastLateness.sort((a, b) => a - b)
  process.stdout.write(
    JSON.stringify({
      checks,
      p50: percentile(lateness, 50),
      p99: percentile(lateness, 99),
      max: lateness.at(-1) ?? 0,
      lastChecks: lastLateness.length,
      lastP99: percentile(lastLateness, 99)
    }) + "\n"
  )
  process.exit(0)
}

// ---------------------------------------------------------------------------
// Canopy runs
// ---------------------------------------------------------------------------

interface RunResult {
  readonly system: string
  readonly monitors: number
  readonly seconds: number
  readonly checks: number
  readonly missed: number
  readonly checksPerSecond: number
  readonly p50: number
  readonly p99: number
  readonly max: number
  /** Share of the monitors checked for their slot in the last interval of the run (steady state). */
  readonly lastIntervalCheckedPercent: number
  readonly lastIntervalP99: number
  readonly cpuPercent: number
  readonly pgCpuPercent: number
  readonly rssMiB: number
  /** Committed transactions per second in Canopy's database (pg_stat_database). */
  readonly xactPerSecond: number
  /** Rows inserted, updated or deleted per second in the cluster's message tables. */
  readonly clusterRowsPerSecond: number
}

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

const runCanopy = async (options: {
  readonly adminUrl: string
  readonly pgDataDir: string
  readonly target: string
  readonly n: number
  readonly seconds: number
  readonly warmup: number
}): Promise<RunResult> => {
  const { n, seconds, warmup } = options
  const dbName = `bench_monitors_${n}_${Date.now()}`
  await withSql(options.adminUrl, (sql) => sql.unsafe(`CREATE DATABASE ${dbName}`))
  const url = new URL(options.adminUrl)
  url.pathname = `/${dbName}`
  const databaseUrl = url.toString()

  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-bench-data-"))
  const port = await freePort()
  let canopy: ChildProcess | undefined
  try {
    canopy = await startProcess("src/main.ts", {
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      ADMIN_TOKEN: "adm_bench_monitors",
      OUTBOUND_ALLOW_PRIVATE: "true",
      REGION: "bench"
    }, `http://127.0.0.1:${port}/readyz`)

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
    console.error(`[bench] N=${n}: ${n} monitors inserted; measuring ${seconds}s from the first slot`)

    // Wait for the first slot, then sample the steady state.
    await sleep(Math.max(0, start - Date.now()))
    const sampler = sample(canopy.pid!, options.pgDataDir)
    const pg0 = await withSql(databaseUrl, pgCounters)
    while (Date.now() < end) {
      await sleep(Math.min(10_000, end - Date.now()))
      const done = Math.round((Date.now() - start) / 1000)
      if (done % 30 < 10) console.error(`[bench] N=${n}: ${done}s / ${seconds}s`)
    }
    const usage = sampler.stop()
    const pg1 = await withSql(databaseUrl, pgCounters)
    const pgLoad = {
      xactPerSecond: (pg1.xact - pg0.xact) / seconds,
      clusterRowsPerSecond: (pg1.clusterRows - pg0.clusterRows) / seconds
    }
    await sleep(12_000) // checks started before `end` finish (timeout 10 s)

    const figures = await withSql(databaseUrl, (sql) =>
      Effect.gen(function*() {
        const [row] = yield* sql<{ checks: number; p50: number; p99: number; max: number }>`
          SELECT count(*)::int AS checks,
            coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY lateness), 0)::float8 AS p50,
            coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY lateness), 0)::float8 AS p99,
            coalesce(max(lateness), 0)::float8 AS max
          FROM (
            SELECT extract(epoch FROM checked_at - slot_at) * 1000 AS lateness FROM heartbeats
            WHERE attempt = 0 AND slot_at >= to_timestamp(${start} / 1000.0) AND slot_at < to_timestamp(${end} / 1000.0)
          ) AS l`
        const [dup] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM (
            SELECT monitor_id, slot_at FROM heartbeats WHERE attempt = 0 GROUP BY 1, 2 HAVING count(*) > 1
          ) AS d`
        if (dup.n > 0) console.error(`[bench] N=${n}: ${dup.n} slots with more than one heartbeat!`)
        // The last interval alone (every monitor has exactly one slot in it): the steady state,
        // after whatever start-up costs the design has.
        const [last] = yield* sql<{ checks: number; p99: number }>`
          SELECT count(*)::int AS checks,
            coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY lateness), 0)::float8 AS p99
          FROM (
            SELECT extract(epoch FROM checked_at - slot_at) * 1000 AS lateness FROM heartbeats
            WHERE attempt = 0 AND slot_at >= to_timestamp(${end - FREQUENCY * 1000} / 1000.0)
              AND slot_at < to_timestamp(${end} / 1000.0)
          ) AS l`
        return { ...row, lastChecks: last.checks, lastP99: last.p99 }
      }))
    return runResult("canopy", { n, seconds, start, end }, figures, { ...usage, ...pgLoad })
  } finally {
    if (canopy !== undefined) await stop(canopy)
    Fs.rmSync(dataDir, { recursive: true, force: true })
    await withSql(options.adminUrl, (sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`)).catch(
      () => undefined
    )
  }
}

/** A table row: the measured figures plus the slots missed (monitor i's first slot is start + i·60 s / n). */
const runResult = (
  system: string,
  run: { readonly n: number; readonly seconds: number; readonly start: number; readonly end: number },
  figures: {
    readonly checks: number
    readonly p50: number
    readonly p99: number
    readonly max: number
    readonly lastChecks: number
    readonly lastP99: number
  },
  usage: {
    readonly cpuPercent: number
    readonly pgCpuPercent: number
    readonly rssMax: number
    readonly xactPerSecond: number
    readonly clusterRowsPerSecond: number
  }
): RunResult => {
  let expected = 0
  for (let i = 0; i < run.n; i++) {
    const first = run.start + Math.floor((i * FREQUENCY * 1000) / run.n)
    if (first < run.end) expected += Math.ceil((run.end - first) / (FREQUENCY * 1000))
  }
  return {
    system,
    monitors: run.n,
    seconds: run.seconds,
    checks: figures.checks,
    missed: Math.max(0, expected - figures.checks),
    checksPerSecond: figures.checks / run.seconds,
    p50: figures.p50,
    p99: figures.p99,
    max: figures.max,
    lastIntervalCheckedPercent: (figures.lastChecks / run.n) * 100,
    lastIntervalP99: figures.lastP99,
    cpuPercent: usage.cpuPercent,
    pgCpuPercent: usage.pgCpuPercent,
    rssMiB: usage.rssMax / (1024 * 1024),
    xactPerSecond: usage.xactPerSecond,
    clusterRowsPerSecond: usage.clusterRowsPerSecond
  }
}

const runBaseline = async (target: string, n: number, seconds: number, warmup: number): Promise<RunResult> => {
  const { spawn } = await import("node:child_process")
  const start = Date.now() + warmup * 1000
  const end = start + seconds * 1000
  const child = spawn("node_modules/.bin/node", ["--import", "tsx", "bench/monitors.ts"], {
    env: { ...process.env, MODE: "baseline", N: String(n), TARGET: target, START: String(start), END: String(end) },
    stdio: ["ignore", "pipe", "inherit"]
  })
  let output = ""
  child.stdout.on("data", (chunk) => output += chunk)
  await sleep(Math.max(0, start - Date.now()))
  const sampler = sample(child.pid!, undefined)
  await sleep(Math.max(0, end - Date.now()))
  const usage = sampler.stop()
  await new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const result = JSON.parse(output.trim().split("\n").at(-1)!) as {
    checks: number
    p50: number
    p99: number
    max: number
    lastChecks: number
    lastP99: number
  }
  return runResult("bare node (baseline)", { n, seconds, start, end }, result, {
    ...usage,
    pgCpuPercent: 0,
    xactPerSecond: 0,
    clusterRowsPerSecond: 0
  })
}

const toRow = (result: RunResult) => ({
  system: result.system,
  monitors: result.monitors,
  "duration s": result.seconds,
  checks: String(result.checks),
  missed: String(result.missed),
  "checks/s": result.checksPerSecond,
  "late p50 ms": result.p50,
  "late p99 ms": result.p99,
  "late max ms": result.max,
  "last min checked %": result.lastIntervalCheckedPercent,
  "last min p99 ms": result.lastIntervalP99,
  "CPU %": result.cpuPercent,
  "PG CPU %": result.pgCpuPercent,
  "RSS MiB": result.rssMiB,
  "PG commits/s": result.xactPerSecond,
  "cluster rows/s": result.clusterRowsPerSecond
})

/** The lateness goal (the RSS goal is reported, not searched). */
const meetsGoal = (result: RunResult) => result.p99 < 1000 && result.missed === 0

const main = async () => {
  const n = env("N", 10_000)
  const seconds = env("DURATION", 200)
  const warmup = env("WARMUP", 30)
  const scope = Effect.runSync(Scope.make())
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-bench-"))
  Fs.chmodSync(dir, 0o755)
  const pgDataDir = Path.join(dir, "pg")
  const pg = await Effect.runPromise(startEmbeddedPostgres({ dataDir: pgDataDir }).pipe(Scope.provide(scope)))
  const targetPort = await freePort()
  const targetProcess = await startProcess(
    "bench/bare-server.ts",
    { PORT: String(targetPort), BODY: "ok" },
    `http://127.0.0.1:${targetPort}/`
  )
  const target = `http://127.0.0.1:${targetPort}`
  const rows: Array<ReturnType<typeof toRow>> = []
  try {
    if (process.env.FIND_MAX === "1") {
      const steps = (process.env.FIND_STEPS ?? "10000,20000,30000,40000,50000,60000,80000").split(",").map(Number)
      let best: RunResult | undefined
      for (const step of steps) {
        const result = await runCanopy({ adminUrl: pg.url, pgDataDir, target, n: step, seconds, warmup })
        rows.push(toRow(result))
        console.error(`[bench] N=${step}: p99 ${result.p99.toFixed(0)} ms, RSS ${result.rssMiB.toFixed(0)} MiB`)
        if (!meetsGoal(result)) break
        best = result
      }
      printTable(rows)
      console.log(
        best === undefined
          ? "\nNo N met the lateness goal (p99 < 1 s, no missed slot)."
          : `\nLargest N meeting the lateness goal (p99 < 1 s, no missed slot): ${best.monitors} (RSS ${
            best.rssMiB.toFixed(0)
          } MiB)`
      )
    } else {
      rows.push(toRow(await runCanopy({ adminUrl: pg.url, pgDataDir, target, n, seconds, warmup })))
      if (process.env.BASELINE !== "0") {
        rows.push(toRow(await runBaseline(target, n, Math.min(seconds, 130), 5)))
      }
      printTable(rows)
      const [canopy] = rows
      console.log(
        `\nGoal (p99 lateness < 1 s, RSS < 1 GiB): ${
          canopy["late p99 ms"] < 1000 && canopy["RSS MiB"] < 1024 ? "met" : "NOT met"
        }. Lateness = check start − slot time; CPU % of one core, averaged over the run.`
      )
    }
  } finally {
    await stop(targetProcess)
    await Effect.runPromise(Scope.close(scope, Exit.void))
    Fs.rmSync(dir, { recursive: true, force: true })
  }
}

if (process.env.MODE === "baseline") {
  void runBaselineChild()
} else {
  main().then(() => process.exit(0), (error) => {
    console.error(error)
    process.exit(1)
  })
}
