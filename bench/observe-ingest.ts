/**
 * `npm run bench:observe-ingest`: realistic error events (8–20 frames, tags, breadcrumbs, user,
 * release; 200 distinct stacks) posted to `POST /api/v1/observe/ingest` of a Canopy
 * process (`src/main.ts` on a temporary embedded Postgres) by a keep-alive load
 * generator on loopback (autocannon, a fresh event in every request):
 *   (a) batches of 100 events per request, (b) one event per request;
 * measuring acknowledged events/s and request latency p50/p99, then checking that the
 * organization's stored events are exactly the acknowledged ones, warm-up and probes included
 * (enterprise plan: nothing is sampled).
 *
 * Baseline in the same run: the same payloads inserted straight into the same Postgres
 * with multi-row `INSERT`s of 100 rows (`id`, `payload jsonb`), from as many concurrent
 * connections as the batched run uses: the physical floor of storing the events. Batched
 * ingestion and the baseline are compared at each of BATCH_CONNECTIONS: a group commit
 * answers a request only after its commit, so with few requests in flight its rate is
 * bounded by that latency, not by the CPU; the raw insert saturates the machine with four.
 * The two are also compared at each one's fastest connection count (peak against peak).
 *
 * Each phase also reports the CPU the server process (for the baseline: this process,
 * which builds the same JSON) and Postgres spent per event, read from /proc: on a shared
 * machine throughput follows whatever else runs, the CPU cost per event does not. The
 * server's main thread is shown apart: it is the serial stage (GC helpers and libuv are the rest).
 * The load generator's own CPU (this process: building and sending the events) is shown too:
 * it shares the two cores with the server and Postgres. The load average is read at the
 * end of each phase.
 *
 * Env: DURATION seconds per phase (default 10), BATCH_CONNECTIONS (comma-separated,
 * default 4,32), SINGLE_CONNECTIONS (default 64).
 */
import { PgClient } from "@effect/sql-pg"
import autocannon from "autocannon"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { loadAverage, measured, postgresCpuMs } from "./cpu.ts"
import { percentile, printTable, startCanopyOnEmbeddedPostgres, stop } from "./support.ts"

const seconds = Number(process.env.DURATION ?? 10)
const batchConnections = (process.env.BATCH_CONNECTIONS ?? "4,32").split(",").map(Number)
const singleConnections = Number(process.env.SINGLE_CONNECTIONS ?? 64)

// ---------------------------------------------------------------------------
// Realistic events
// ---------------------------------------------------------------------------

const words = ["user", "order", "cart", "payment", "session", "invoice", "profile", "search", "token", "report"]
const pick = <A>(items: ReadonlyArray<A>, n: number) => items[n % items.length]

/** Stack `s` of 200: 8–20 frames, mostly in-app, some library frames. */
const stack = (s: number) =>
  Array.from({ length: 8 + (s % 13) }, (_, i) => ({
    filename: i < 3 ?
      `node_modules/${pick(words, s + i)}-lib/index.js` :
      `src/${pick(words, s * 7 + i)}/${pick(words, i)}.ts`,
    function: `${pick(words, s + i * 3)}${pick(["Handler", "Service", "Repository", "Controller"], i)}.${
      pick(["load", "save", "render", "validate", "dispatch"], s + i)
    }`,
    lineno: 10 + ((s * 31 + i * 17) % 400),
    colno: 1 + (i * 7) % 80,
    in_app: i >= 3
  }))

let sequence = 0
const makeEvent = () => {
  const n = sequence++
  const s = n % 200
  return {
    message: `Cannot read properties of undefined (reading '${pick(words, s)}') for id ${n}`,
    level: "error",
    platform: "javascript",
    timestamp: new Date().toISOString(),
    release: `web@1.${s % 5}.0`,
    environment: pick(["production", "staging"], n),
    sdk: { name: "canopy.javascript", version: "1.0.0" },
    user: { id: `user-${n % 5000}`, email: `user${n % 5000}@example.com` },
    tags: { browser: pick(["Chrome 131", "Firefox 133", "Safari 18"], n), region: pick(["eu", "us", "ap"], n) },
    exception: {
      type: pick(["TypeError", "RangeError", "Error"], s),
      value: "Cannot read properties",
      stacktrace: { frames: stack(s) }
    },
    breadcrumbs: Array.from({ length: 5 + (n % 6) }, (_, i) => ({
      timestamp: new Date(Date.now() - i * 1000).toISOString(),
      category: pick(["http", "navigation", "ui.click", "console"], i),
      message: `GET /api/${pick(words, n + i)}/${n % 1000} 200`,
      level: "info"
    }))
  }
}

// ---------------------------------------------------------------------------
// Load generator: autocannon (as bench:api and bench:status use), one request in flight per
// connection, a fresh event in every request. It shares the two cores with the server and
// Postgres, so it has to be light: a `node:http` request cost it ~125 µs of CPU here, one of
// autocannon's ~80 (docs/decisions.md, "A slower machine, and the ingest load generator"). A
// phase sends a fixed number of requests (sized from a short probe to last `durationSeconds`)
// rather than stopping at a deadline: every request sent is answered and counted, so the
// stored count can be checked against the acknowledged one exactly.
// ---------------------------------------------------------------------------

interface Phase {
  readonly acknowledged: number
  readonly eventsPerSecond: number
  readonly p50: number
  readonly p99: number
  readonly failures: number
  /** This process's CPU: building the events and sending them (the baseline's equivalent is its own process). */
  readonly clientCpuMs: number
  readonly loadAverage: number
}

const bodyOf = (eventsPerRequest: number) =>
  eventsPerRequest === 1
    ? JSON.stringify(makeEvent())
    : JSON.stringify({ events: Array.from({ length: eventsPerRequest }, makeEvent) })

/** Sends `requests` requests of `eventsPerRequest` fresh events over `connections` keep-alive connections. */
const send = (url: string, key: string, connections: number, eventsPerRequest: number, requests: number) =>
  new Promise<Phase>((resolve, reject) => {
    const client0 = process.cpuUsage()
    // autocannon notices the last answer on its next one-second tick: time the answers themselves.
    const started = performance.now()
    let lastAnswer = started
    const instance = autocannon({
      url,
      method: "POST",
      connections: Math.min(connections, requests),
      pipelining: 1,
      amount: requests,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      requests: [{ setupRequest: (request) => ({ ...request, body: bodyOf(eventsPerRequest) }) }]
    }, (error, result) => {
      if (error) return reject(error)
      const seconds = (lastAnswer - started) / 1000
      const client = process.cpuUsage(client0)
      const answered = result.statusCodeStats?.["202"]?.count ?? 0
      resolve({
        acknowledged: answered * eventsPerRequest,
        eventsPerSecond: (answered * eventsPerRequest) / seconds,
        p50: result.latency.p50,
        p99: result.latency.p99,
        // `errors` already counts timeouts; any answer but a 202 is a failure too.
        failures: result.errors + (result["2xx"] + result.non2xx - answered),
        clientCpuMs: (client.user + client.system) / 1000,
        loadAverage: loadAverage()
      })
    })
    instance.on("response", () => lastAnswer = performance.now())
  })

/** How many requests of `eventsPerRequest` events make about `durationSeconds` at the rate a short probe reaches. */
const sizePhase = async (
  url: string,
  key: string,
  connections: number,
  eventsPerRequest: number,
  durationSeconds: number
) => {
  const probe = await send(url, key, connections, eventsPerRequest, connections * 8)
  const requests = Math.max(connections, Math.round((probe.eventsPerSecond / eventsPerRequest) * durationSeconds))
  return { requests, probeAcknowledged: probe.acknowledged }
}

// ---------------------------------------------------------------------------
// Baseline: multi-row INSERTs of the same payloads into the same Postgres
// ---------------------------------------------------------------------------

const rawInserts = (databaseUrl: string, pgDir: string, connections: number, durationSeconds: number) =>
  Effect.runPromise(Effect.scoped(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE IF NOT EXISTS bench_raw_events (id text PRIMARY KEY, payload jsonb NOT NULL)`
      // Open every connection first: their backends' CPU is read before the pool closes them.
      yield* Effect.forEach(Array.from({ length: connections }), () => sql`SELECT pg_sleep(0.05)`, {
        concurrency: connections
      })
      const cpu0 = { self: process.cpuUsage(), thread: process.threadCpuUsage(), pg: postgresCpuMs(pgDir) }
      let inserted = 0
      const latencies: Array<number> = []
      const started = performance.now()
      const deadline = started + durationSeconds * 1000
      yield* Effect.forEach(Array.from({ length: connections }), () =>
        Effect.gen(function*() {
          while (performance.now() < deadline) {
            const rows: Array<Record<string, unknown>> = Array.from({ length: 100 }, () => ({
              id: `raw_${sequence++}`,
              payload: JSON.stringify(makeEvent())
            }))
            const sent = performance.now()
            yield* sql`INSERT INTO bench_raw_events ${
              sql.insert(rows as [Record<string, unknown>, ...Array<Record<string, unknown>>])
            }`
            latencies.push(performance.now() - sent)
            inserted += rows.length
          }
        }), { concurrency: connections, discard: true })
      const elapsed = (performance.now() - started) / 1000
      const self = process.cpuUsage(cpu0.self)
      const thread = process.threadCpuUsage(cpu0.thread)
      return {
        inserted,
        eventsPerSecond: inserted / elapsed,
        latencies: latencies.sort((a, b) => a - b),
        serverCpuMs: (self.user + self.system) / 1000,
        serverMainCpuMs: (thread.user + thread.system) / 1000,
        pgCpuMs: postgresCpuMs(pgDir) - cpu0.pg,
        loadAverage: loadAverage()
      }
    }).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: connections }))
    )
  ))

const storedCount = (databaseUrl: string) =>
  Effect.runPromise(Effect.scoped(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM observe_events`
      return rows[0].n
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 })))
  ))

// ---------------------------------------------------------------------------

/** `f` of each item, one after the other (phases must not overlap). */
const inTurn = async <A, B>(items: ReadonlyArray<A>, f: (item: A) => Promise<B>) => {
  const results: Array<B> = []
  for (const item of items) results.push(await f(item))
  return results
}

const main = async () => {
  const { admin, base, canopy, close, pg, pgDir } = await startCanopyOnEmbeddedPostgres()
  await admin("/orgs", { slug: "bench", name: "Bench", plan: "enterprise" })
  await admin("/orgs/bench/users", { username: "bench", email: "bench@example.com", role: "owner" })
  const { key } = await admin("/orgs/bench/keys", { username: "bench" })
  const ingestUrl = `${base}/api/v1/observe/ingest`

  let acknowledged = 0
  /** One measured phase of about `seconds`, sized by a probe just before it. */
  const phase = async (connections: number, eventsPerRequest: number) => {
    const sized = await sizePhase(ingestUrl, key, connections, eventsPerRequest, seconds)
    const run = await measured(
      canopy.pid!,
      pgDir,
      () => send(ingestUrl, key, connections, eventsPerRequest, sized.requests)
    )
    acknowledged += sized.probeAcknowledged + run.acknowledged
    return run
  }
  // Warm-up: JIT, entity activation, issues.
  acknowledged += (await send(ingestUrl, key, batchConnections[0], 100, 200)).acknowledged
  // Single events right after the first level, on the database that level left (as before the levels existed).
  const first = await phase(batchConnections[0], 100)
  const single = await phase(singleConnections, 1)
  const batchedRuns = [first, ...await inTurn(batchConnections.slice(1), (connections) => phase(connections, 100))]
  await stop(canopy)
  // Every event this organization has is one the load generator had acknowledged: none more, none fewer.
  const stored = await storedCount(pg.url)

  const rawRuns = await inTurn(batchConnections, (connections) => rawInserts(pg.url, pgDir, connections, seconds))
  await close()

  console.log(`\nObserve ingestion, ${seconds} s per phase, load generator on loopback (2-core machine)\n`)
  const perEvent = (cpuMs: number, events: number) => events === 0 ? 0 : (cpuMs * 1000) / events
  const ingestRow = (name: string, run: (typeof batchedRuns)[number]) => ({
    phase: name,
    "events/s": run.eventsPerSecond,
    "p50 ms": run.p50,
    "p99 ms": run.p99,
    "failed req": run.failures,
    "server CPU µs/event": perEvent(run.serverCpuMs, run.acknowledged),
    "of it main thread": perEvent(run.serverMainCpuMs, run.acknowledged),
    "postgres CPU µs/event": perEvent(run.pgCpuMs, run.acknowledged),
    "load generator CPU µs/event": perEvent(run.clientCpuMs, run.acknowledged),
    "load avg": run.loadAverage
  })
  printTable([
    ...batchedRuns.map((run, n) => ingestRow(`(a) ingest, batches of 100, ${batchConnections[n]} conns`, run)),
    ingestRow(`(b) ingest, 1 event/request, ${singleConnections} conns`, single),
    ...rawRuns.map((raw, n) => ({
      phase: `baseline: raw INSERT 100 rows, ${batchConnections[n]} conns`,
      "events/s": raw.eventsPerSecond,
      "p50 ms": percentile(raw.latencies, 50),
      "p99 ms": percentile(raw.latencies, 99),
      "failed req": 0,
      "server CPU µs/event": perEvent(raw.serverCpuMs, raw.inserted),
      "of it main thread": perEvent(raw.serverMainCpuMs, raw.inserted),
      "postgres CPU µs/event": perEvent(raw.pgCpuMs, raw.inserted),
      "load generator CPU µs/event": perEvent(raw.serverCpuMs, raw.inserted),
      "load avg": raw.loadAverage
    }))
  ])
  console.log(
    "\nStored per event: ingest writes one row (the event without its frames, and a reference to its stack; each" +
      "\ndistinct stack once) and counts it into its release and the sampling window in bulk per commit, and into its" +
      "\nissue through one buffered row per commit, folded into the issue rows about once a second (migration 0020)," +
      "\nwith no foreign-key checks on events (migration 0016); the baseline writes each full payload as one jsonb row."
  )
  console.log(`\nacknowledged ${acknowledged}, stored ${stored}: ${stored === acknowledged ? "none lost" : "MISMATCH"}`)
  batchConnections.forEach((connections, n) =>
    console.log(
      `ratio batched ingest / raw insert, ${connections} connections each: ${
        (100 * batchedRuns[n].eventsPerSecond / rawRuns[n].eventsPerSecond).toFixed(1)
      }% (goal >= 100%, never below 50%)`
    )
  )
  // Each at the connection count where it is fastest: the two rates the machine allows.
  const peak = (rates: ReadonlyArray<number>) => Math.max(...rates)
  const peakBatched = peak(batchedRuns.map((run) => run.eventsPerSecond))
  const peakRaw = peak(rawRuns.map((raw) => raw.eventsPerSecond))
  console.log(
    `ratio peak batched ingest / peak raw insert: ${(100 * peakBatched / peakRaw).toFixed(1)}% ` +
      `(${peakBatched.toFixed(0)} against ${peakRaw.toFixed(0)} events/s; goal >= 100%)`
  )
  console.log(`single-event ingest: ${single.eventsPerSecond.toFixed(0)} events/s (goal >= 3000, p99 < 50 ms)`)
  const cpuPerEvent = (phase: { serverCpuMs: number; pgCpuMs: number }, events: number) =>
    perEvent(phase.serverCpuMs + phase.pgCpuMs, events)
  batchConnections.forEach((connections, n) =>
    console.log(
      `CPU per event (server + Postgres), raw insert / batched ingest, ${connections} connections: ${
        (100 * cpuPerEvent(rawRuns[n], rawRuns[n].inserted) /
          cpuPerEvent(batchedRuns[n], batchedRuns[n].acknowledged)).toFixed(1)
      }%`
    )
  )
  if (stored !== acknowledged) process.exitCode = 1
}

main().then(() => process.exit(process.exitCode ?? 0), (error) => {
  console.error(error)
  process.exit(1)
})
