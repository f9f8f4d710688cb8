/**
 * `npm run bench:git-isolation`: does one tenant's heavy git work make every tenant's
 * monitors late? One Canopy runner (`src/main.ts` on a temporary embedded Postgres) checks
 * N monitors (default 10,000, every 60 s, against a local HTTP target, as `bench:monitors`)
 * through two windows of equal length: a quiet one, then one in which another tenant pushes
 * the real-history case of `bench:git` (every branch and tag in one push), clones it, and
 * sends an ingest burst beside it. Printed per window: monitor lateness (check start − slot)
 * p50/p99/max, checks, and the runner's log lines that tell of a struggling control plane
 * (shard lock storage unhealthy, shards that could not be released or were force-released).
 *
 * Goal: p99 lateness < 1 s and none of those lines in the heavy window.
 *
 * Env: N (10000), WINDOW seconds (70, at least one monitor interval), WARMUP (30),
 * HISTORY_COMMITS / HISTORY_BRANCHES / HISTORY_TAGS (as bench:git), INGEST_REQUESTS (200 requests of
 * 100 events).
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { startEmbeddedPostgres } from "../services/platform/EmbeddedPostgres.ts"
import { loadAverage } from "./cpu.ts"
import { generateHistory, HISTORY } from "./git-history.ts"
import { isolatedGitEnv, run } from "./git-repo.ts"
import { freePort, printTable, startProcess, stop } from "./support.ts"

const env = (name: string, fallback: number) => Number(process.env[name] || fallback)
const N = env("N", 10_000)
const WINDOW = env("WINDOW", 70)
const WARMUP = env("WARMUP", 30)
const INGEST_REQUESTS = env("INGEST_REQUESTS", 200)
const FREQUENCY = 60
const adminToken = "adm_bench_isolation"
const LOG_FILE = Path.join(Os.tmpdir(), "canopy-bench-git-isolation.log")
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Log lines of a control plane in trouble (effect/cluster's Sharding). */
const TROUBLE: ReadonlyArray<readonly [string, RegExp]> = [
  ["unhealthy", /Shard lock storage is (still )?unhealthy/],
  ["could not release", /Could not (acquire\/)?release shards/],
  ["forced release", /Forced shard release/]
]

const withSql = <A>(url: string, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown, never>) =>
  Effect.runPromise(Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }), scope)
    return yield* f(Context.get(context, SqlClient.SqlClient)).pipe(Effect.ensuring(Scope.close(scope, Exit.void)))
  }))

const lateness = (url: string, from: number, to: number) =>
  withSql(url, (sql) =>
    Effect.map(
      sql<{ checks: number; p50: number; p99: number; max: number }>`
        SELECT count(*)::int AS checks,
          coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY l), 0)::float8 AS p50,
          coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY l), 0)::float8 AS p99,
          coalesce(max(l), 0)::float8 AS max
        FROM (SELECT extract(epoch FROM checked_at - slot_at) * 1000 AS l FROM heartbeats
          WHERE attempt = 0 AND slot_at >= to_timestamp(${from} / 1000.0) AND slot_at < to_timestamp(${to} / 1000.0)) s`,
      ([row]) => row
    ))

const ingestBurst = async (baseUrl: string, key: string) => {
  let sent = 0
  let failed = 0
  const one = async (r: number) => {
    const events = Array.from({ length: 100 }, (_, i) => ({
      message: `burst error ${r % 40} for id ${r * 100 + i}`,
      level: "error",
      platform: "javascript",
      release: "web@1.0.0",
      exception: {
        type: "TypeError",
        value: `failure ${r % 40}`,
        stacktrace: { frames: [{ filename: "src/a.ts", lineno: r % 40 }] }
      }
    }))
    // A request not answered within a minute counts as failed (and is reported), not as a hang of the benchmark.
    const status = await fetch(`${baseUrl}/api/v1/observe/ingest`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ events }),
      signal: AbortSignal.timeout(60_000)
    }).then(async (response) => {
      await response.arrayBuffer()
      return response.status
    }, () => 0)
    if (status === 202) sent += 100
    else failed++
  }
  // Four requests in flight: a burst, not a denial of service.
  for (let r = 0; r < INGEST_REQUESTS; r += 4) {
    await Promise.all([0, 1, 2, 3].filter((k) => r + k < INGEST_REQUESTS).map((k) => one(r + k)))
  }
  return { sent, failed }
}

const main = async () => {
  const scope = Effect.runSync(Scope.make())
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-bench-isolation-"))
  Fs.chmodSync(dir, 0o755)
  const gitEnv = isolatedGitEnv(Path.join(dir, "home"), "Bench", "bench@example.com")
  Fs.mkdirSync(Path.join(dir, "home"))
  const source = Path.join(dir, "history.git")
  const { lateRef } = await generateHistory(source, gitEnv)
  const pg = await Effect.runPromise(
    startEmbeddedPostgres({ dataDir: Path.join(dir, "pg") }).pipe(Scope.provide(scope))
  )
  const targetPort = await freePort()
  const target = await startProcess(
    "bench/bare-server.ts",
    { PORT: String(targetPort), BODY: "ok" },
    `http://127.0.0.1:${targetPort}/`
  )

  // Canopy, with its log kept so the lines of trouble can be counted per window.
  const port = await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  const log: Array<{ at: number; line: string }> = []
  const canopy = spawn("node_modules/.bin/node", ["src/main.ts"], {
    env: {
      ...process.env,
      DATABASE_URL: pg.url,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: Path.join(dir, "canopy"),
      ADMIN_TOKEN: adminToken,
      OUTBOUND_ALLOW_PRIVATE: "true",
      REGION: "bench"
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n")) if (line !== "") log.push({ at: Date.now(), line })
  }
  canopy.stdout.on("data", collect)
  canopy.stderr.on("data", collect)
  try {
    for (let ready = false; !ready; await sleep(200)) {
      if (canopy.exitCode !== null) throw new Error(log.map((l) => l.line).join("\n"))
      ready = await fetch(`${baseUrl}/readyz`).then((r) => r.ok, () => false)
    }
    const admin = (path: string, body: unknown, token = adminToken) =>
      fetch(`${baseUrl}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(body)
      }).then((r) => r.json() as Promise<any>)
    // The monitors' tenant, and the tenant that imports and ingests.
    await admin("/api/v1/admin/orgs", { slug: "monitors", name: "Monitors", plan: "enterprise" })
    await admin("/api/v1/admin/orgs", { slug: "heavy", name: "Heavy", plan: "enterprise" })
    await admin("/api/v1/admin/orgs/heavy/users", { username: "heavy", email: "heavy@example.com", role: "owner" })
    const { key } = await admin("/api/v1/admin/orgs/heavy/keys", { username: "heavy" })
    await admin("/api/v1/code/repos", { name: "history" }, key)

    const start = await withSql(pg.url, (sql) =>
      Effect.gen(function*() {
        const [{ id }] = yield* sql<{ id: string }>`SELECT id FROM organizations WHERE slug = 'monitors'`
        const [{ t0 }] = yield* sql<{ t0: number }>`
          SELECT (floor(extract(epoch FROM now()) * 1000) + ${WARMUP * 1000})::float8 AS t0`
        yield* sql`
          INSERT INTO monitors (id, org_id, name, url, frequency, timeout, retries, next_check_at, status_since)
          SELECT 'mon_bench_' || i, ${id}, 'bench ' || i, ${`http://127.0.0.1:${targetPort}`} || '/m/' || i,
            ${FREQUENCY}, 10, 1, to_timestamp((${t0} + floor(i::float8 * ${FREQUENCY * 1000} / ${N})) / 1000.0), now()
          FROM generate_series(0, ${N - 1}) AS i`
        return t0
      }))
    console.error(`[bench] ${N} monitors inserted; quiet window from the first slot, then the heavy one`)
    const heavyFrom = start + WINDOW * 1000
    const end = heavyFrom + WINDOW * 1000
    await sleep(Math.max(0, heavyFrom - Date.now()))

    const url = `http://git:${key}@127.0.0.1:${port}/heavy/history.git`
    const t0 = performance.now()
    const [pushMs, { failed, sent: ingested }] = await Promise.all([
      (async () => {
        await run([
          "--git-dir",
          source,
          "-c",
          "credential.helper=",
          "push",
          "-q",
          url,
          `${lateRef}:refs/heads/main`,
          "refs/heads/line-*:refs/heads/line-*",
          "refs/tags/v*:refs/tags/v*"
        ], gitEnv)
        const pushed = performance.now() - t0
        await run(["-c", "credential.helper=", "clone", "-q", "--bare", url, Path.join(dir, "copy.git")], gitEnv)
        return pushed
      })(),
      ingestBurst(baseUrl, key)
    ])
    const heavyMs = performance.now() - t0
    console.error(
      `[bench] push ${pushMs.toFixed(0)} ms, push + clone + ${ingested} events ${heavyMs.toFixed(0)} ms` +
        (failed > 0 ? `; ${failed} ingest requests failed or unanswered within 60 s` : "")
    )
    await sleep(Math.max(0, end - Date.now()) + 12_000) // checks started before `end` finish (timeout 10 s)

    const rows = []
    for (
      const [name, from, to] of [["quiet", start, heavyFrom], ["heavy push + clone + ingest", heavyFrom, end]] as const
    ) {
      const figures = await lateness(pg.url, from, to)
      const lines = log.filter((l) => l.at >= from && l.at < to + 12_000)
      rows.push({
        window: name,
        checks: figures.checks,
        "lateness p50 ms": figures.p50,
        "p99 ms (goal < 1000)": figures.p99,
        "max ms": figures.max,
        ...Object.fromEntries(
          TROUBLE.map(([label, pattern]) => [label, lines.filter((l) => pattern.test(l.line)).length])
        )
      })
    }
    console.log(
      `\nMonitor lateness beside one tenant's import (N=${N}, windows of ${WINDOW} s; history ${HISTORY.commits} ` +
        `commits, ${HISTORY.branches + 1} branches, ${HISTORY.tags} tags pushed in ${(pushMs / 1000).toFixed(1)} s; ` +
        `${ingested} events ingested${failed > 0 ? ` (${failed} requests failed)` : ""}; load average ${
          loadAverage().toFixed(1)
        } on ${Os.availableParallelism()} cores)\n`
    )
    printTable(rows)
  } finally {
    Fs.writeFileSync(LOG_FILE, log.map((l) => l.line).join("\n"))
    console.error(`[bench] Canopy's log: ${LOG_FILE}`)
    await stop(canopy)
    await stop(target)
    await Effect.runPromise(Scope.close(scope, Exit.void))
    Fs.rmSync(dir, { recursive: true, force: true })
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
