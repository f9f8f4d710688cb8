import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { ChildProcess } from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { type CpuQuota, makeCpuQuota } from "./cpu-quota.ts"
import { freePort, startProcess, stop } from "./support.ts"

/**
 * `bench:monitors`' Canopy processes (`src/main.ts`) on one database: a single embedded-style
 * runner, or `count` runners in multi-runner mode (each its own HTTP port, runner socket and
 * `REGION`, so heartbeats name the runner that checked them), as README "Multi-runner mode".
 */

export interface Runners {
  readonly processes: ReadonlyArray<ChildProcess>
  /** `REGION` of runner i, written on the heartbeats it records. */
  readonly regions: ReadonlyArray<string>
  readonly close: () => Promise<void>
}

export const startRunners = async (options: {
  readonly databaseUrl: string
  readonly count: number
  /** Socket runners (RUNNER_ADDRESS) even for one runner, to compare like with like. */
  readonly cluster: boolean
  /** Cores each runner may use (a cgroup quota of its own), as if each ran on a small machine. */
  readonly coresPerRunner?: number | undefined
}): Promise<Runners> => {
  const processes: Array<ChildProcess> = []
  const dataDirs: Array<string> = []
  const regions: Array<string> = []
  const quotas: Array<CpuQuota> = []
  // Runners of one cluster share the master key (README "Multi-runner mode").
  const masterKey = Crypto.randomBytes(32).toString("hex")
  const close = async () => {
    await Promise.all(processes.map(stop))
    for (const quota of quotas) quota.remove()
    for (const dir of dataDirs) Fs.rmSync(dir, { recursive: true, force: true })
  }
  try {
    // One after the other: the first runs the migrations before the next joins.
    for (let i = 1; i <= options.count; i++) {
      const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-bench-data-"))
      dataDirs.push(dataDir)
      const region = options.count > 1 ? `bench-${i}` : "bench"
      const port = await freePort()
      const cluster = options.cluster || options.count > 1
      const quota = options.coresPerRunner === undefined ? undefined : makeCpuQuota(region, options.coresPerRunner)
      if (quota !== undefined) quotas.push(quota)
      processes.push(
        await startProcess(
          "src/main.ts",
          {
            DATABASE_URL: options.databaseUrl,
            PORT: String(port),
            HOST: "127.0.0.1",
            DATA_DIR: dataDir,
            ADMIN_TOKEN: "adm_bench_monitors",
            MASTER_KEY: masterKey,
            OUTBOUND_ALLOW_PRIVATE: "true",
            REGION: region,
            ...(cluster ? { RUNNER_ADDRESS: `127.0.0.1:${await freePort()}` } : {})
          },
          `http://127.0.0.1:${port}/readyz`,
          quota?.add
        )
      )
      regions.push(region)
    }
    return { processes, regions, close }
  } catch (error) {
    await close()
    throw error
  }
}

// The namespace of effect/cluster's shard advisory locks (SqlRunnerStorage, table prefix
// "cluster"): FNV-1a of "effect-cluster:cluster", shown unsigned in pg_locks.classid.
const shardLockNamespace = (() => {
  const bytes = new TextEncoder().encode("effect-cluster:cluster")
  let hash = 0x811c9dc5
  for (const byte of bytes) hash = Math.imul(hash ^ byte, 0x01000193)
  return hash >>> 0
})()

/**
 * Waits until `count` lock sessions (one per runner) each hold at least 80% of an even share
 * of the shards, and that split holds for two polls in a row.
 */
export const waitForShardsSpread = (sql: SqlClient.SqlClient, count: number, timeoutMs = 120_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    let steady = 0
    while (true) {
      const held = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid = ${shardLockNamespace}::oid
        GROUP BY pid`
      const total = held.reduce((sum, row) => sum + row.n, 0)
      const spread = total > 0 && held.length === count && held.every((row) => row.n >= (0.8 * total) / count)
      steady = spread ? steady + 1 : 0
      if (steady >= 2) return held.map((row) => row.n)
      if (Date.now() > deadline) {
        return yield* Effect.die(new Error(`shards not spread over ${count} runners: ${JSON.stringify(held)}`))
      }
      yield* Effect.sleep("1 second")
    }
  })

/**
 * Samples what Canopy's Postgres sessions wait for (pg_stat_activity, every 200 ms) while
 * `active()`: the average number of sessions seen in each wait (`CPU` when running), e.g.
 * `Lock:object` (the database-wide lock a NOTIFYing transaction holds through its commit),
 * `LWLock:WALWrite` or `IO:WalSync`.
 */
export const sampleWaits = (sql: SqlClient.SqlClient, active: () => boolean) =>
  Effect.gen(function*() {
    const counts = new Map<string, number>()
    let samples = 0
    while (active()) {
      const rows = yield* sql<{ wait: string; n: number }>`
        SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS wait, count(*)::int AS n
        FROM pg_stat_activity
        WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
          AND coalesce(wait_event_type, '') NOT IN ('Client', 'Activity')
        GROUP BY 1`
      samples++
      for (const row of rows) counts.set(row.wait, (counts.get(row.wait) ?? 0) + row.n)
      yield* Effect.sleep("200 millis")
    }
    return [...counts].sort((a, b) => b[1] - a[1]).slice(0, 6)
      .map(([wait, n]) => `${wait} ${(n / Math.max(1, samples)).toFixed(2)}`).join(", ")
  })

/** With `PG_STATEMENTS=1`: Postgres loads pg_stat_statements (see `topStatements`). */
export const statementSettings = { shared_preload_libraries: "pg_stat_statements", "pg_stat_statements.track": "all" }

/** Starts counting this database's statements from zero; the time it did (`performance.now()`). */
export const resetStatements = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    yield* sql`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`
    yield* sql`SELECT pg_stat_statements_reset()`
    return performance.now()
  })

/**
 * The `top` statements of this database by Postgres time since `resetStatements`, one line
 * each: calls per second, milliseconds per call and the share of one core.
 */
export const topStatements = (sql: SqlClient.SqlClient, since: number, top = 8) =>
  Effect.gen(function*() {
    const seconds = (performance.now() - since) / 1000
    const rows = yield* sql<{ calls: number; ms: number; query: string }>`
      SELECT calls::float8 AS calls, total_exec_time AS ms, left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 110) AS query
      FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
      ORDER BY total_exec_time DESC LIMIT ${top}`
    return rows.map((row) =>
      `${(row.calls / seconds).toFixed(0).padStart(6)}/s ${
        (row.ms / Math.max(1, row.calls)).toFixed(3).padStart(8)
      } ms ` +
      `${(row.ms / 10 / seconds).toFixed(1).padStart(5)}% ${row.query}`
    )
  })
