/**
 * `npm run bench:webhooks`: EVENTS `monitor.status` (down) events published through the real
 * outbox (`publishAll`, batches of BATCH per transaction) into ORGS organizations, each with
 * HOOKS_PER_ORG webhooks subscribed to `monitor.down`, all pointing at one local receiver (in
 * this process). Canopy runs as a separate process (`src/main.ts`, one runner, a temporary
 * embedded Postgres). Defaults: 10,000 events over 100 organizations with one webhook each,
 * so 10,000 deliveries to 100 webhooks (100 in order per webhook).
 *
 * Reports deliveries/s (first commit to last receipt), commit→receipt latency p50/p99, and,
 * in a last phase, the lateness of scheduled retries: RETRY_HOOKS webhooks
 * (retryIntervalSeconds 10) whose receiver fails the first attempt; lateness = attempt 2's
 * start − (attempt 1's start + 10 s), from the delivery log. The baseline, in the same run, is
 * a bare Node loop posting the same payloads to the same receiver with the same concurrency
 * (one sequential poster per webhook), `node:http` with a keep-alive agent like Canopy's sender
 * (BARE_KEEPALIVE=0: new connections per request, for comparison with older figures). The two
 * take turns for ROUNDS rounds (a fresh burst of EVENTS events each), as `bench:api`'s servers
 * do, so a spell of load from elsewhere on the machine falls on both sides; the ratio is the
 * median of the rounds' ratios.
 *
 * Also reports the CPU the Canopy process, Postgres (postmaster and backends) and this process
 * (publisher and receiver; for the bare loop, poster and receiver) spent per delivery in the
 * Canopy rounds, from /proc, and the load average: throughput on a shared machine follows the
 * other processes, CPU per delivery much less.
 *
 * Env: EVENTS (10000), ORGS (100), HOOKS_PER_ORG (1), BATCH (100), RETRY_HOOKS (50), ROUNDS (3).
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { MonitorStatusEvent } from "../schemas/monitors/Monitors.ts"
import { publishAll } from "../services/events/Events.ts"
import { makeSendAgents } from "../services/webhooks/Sender.ts"
import { cpuMs, loadAverage, postgresCpuMs } from "./cpu.ts"
import { benchAdminToken, percentile, printTable, startCanopyOnEmbeddedPostgres } from "./support.ts"

const env = (name: string, fallback: number) => {
  const value = process.env[name]
  return value === undefined || value === "" ? fallback : Number(value)
}
const EVENTS = env("EVENTS", 10_000)
const ORGS = env("ORGS", 100)
const HOOKS_PER_ORG = env("HOOKS_PER_ORG", 1)
const BATCH = env("BATCH", 100)
const RETRY_HOOKS = env("RETRY_HOOKS", 50)
const ROUNDS = env("ROUNDS", 3)
const RETRY_INTERVAL = 10

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The receiver: answers 200 (or 500 on a first attempt under /fail-once/), notes each arrival. */
const startReceiver = async () => {
  const arrivals = new Map<string, Array<number>>()
  const seenFailOnce = new Set<string>()
  let count = 0
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const at = performance.now() + performance.timeOrigin
      count++
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { monitor?: { id: string } }
      const key = body.monitor?.id ?? "?"
      const list = arrivals.get(key) ?? []
      list.push(at)
      arrivals.set(key, list)
      if (req.url!.startsWith("/fail-once/") && !seenFailOnce.has(req.url!)) {
        seenFailOnce.add(req.url!)
        res.statusCode = 500
      }
      res.end("ok")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    arrivals,
    count: () => count,
    reset: () => {
      arrivals.clear()
      count = 0
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

const statusEvent = (orgId: string, i: number) =>
  MonitorStatusEvent.make(orgId, {
    monitorId: `mon_${i}`,
    name: `bench ${i}`,
    status: "down",
    previousStatus: "up",
    timestamp: new Date().toISOString()
  })

/** The bare baseline: one sequential poster per webhook, the same payloads, no database. */
const bareLoop = async (target: (hook: number) => string, payloads: Array<Array<string>>) => {
  const agent = process.env.BARE_KEEPALIVE === "0" ? false : makeSendAgents().http
  const post = (url: string, body: string) =>
    new Promise<void>((resolve, reject) => {
      const request = Http.request(url, {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) }
      }, (response) => {
        response.resume()
        response.on("end", () => resolve())
      })
      request.on("error", reject)
      request.end(body)
    })
  const started = performance.now()
  await Promise.all(payloads.map(async (list, hook) => {
    for (const body of list) await post(target(hook), body)
  }))
  const elapsed = performance.now() - started
  if (agent !== false) agent.destroy()
  return elapsed
}

const main = async () => {
  const receiver = await startReceiver()
  const { base, canopy, close, pg, pgDir, scope } = await startCanopyOnEmbeddedPostgres({
    OUTBOUND_ALLOW_PRIVATE: "true"
  })
  const sqlContext = await Effect.runPromise(
    Layer.buildWithScope(PgClient.layer({ url: Redacted.make(pg.url), maxConnections: 4 }), scope)
  )
  const sql = Context.get(sqlContext, SqlClient.SqlClient)

  try {
    const call = (path: string, body: unknown, token = benchAdminToken) =>
      fetch(`${base}/api/v1${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(body)
      }).then(async (r) => {
        if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`)
        return r.json() as Promise<any>
      })
    const setUpOrgs = async (prefix: string, count: number, hook: (org: number) => Record<string, unknown>) => {
      const orgIds: Array<string> = []
      for (let i = 0; i < count; i++) {
        const slug = `${prefix}-${i}`
        const org = await call("/admin/orgs", { slug, name: slug, plan: "enterprise", requestsPerMinute: 1_000_000 })
        await call(`/admin/orgs/${slug}/users`, {
          username: `${slug}-owner`,
          email: `${slug}@example.com`,
          role: "owner"
        })
        const { key } = await call(`/admin/orgs/${slug}/keys`, { username: `${slug}-owner` })
        for (let h = 0; h < HOOKS_PER_ORG; h++) await call("/webhooks", hook(i), key)
        orgIds.push(org.id)
      }
      return orgIds
    }

    const orgIds = await setUpOrgs("bench", ORGS, (i) => ({
      url: receiver.url(`/org/${i}`),
      events: ["monitor.down"],
      secret: "bench-secret"
    }))
    console.error(`[bench] ${ORGS} organizations × ${HOOKS_PER_ORG} webhooks; ${ROUNDS} rounds of ${EVENTS} events`)
    const commitsNow = () =>
      Effect.runPromise(sql<{ n: string }>`
        SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()`).then((rows) =>
        Number(rows[0].n)
      )
    const expected = EVENTS * HOOKS_PER_ORG

    /** One burst through Canopy: events `offset…offset + EVENTS` published, every delivery awaited. */
    const canopyRound = async (offset: number) => {
      receiver.reset()
      const commitsBefore = await commitsNow()
      const cpu0 = { canopy: cpuMs(canopy.pid!), pg: postgresCpuMs(pgDir), bench: process.cpuUsage() }
      const committedAt = new Array<number>(EVENTS)
      const first = performance.now() + performance.timeOrigin
      for (let start = 0; start < EVENTS; start += BATCH) {
        const batch = Array.from({ length: Math.min(BATCH, EVENTS - start) }, (_, k) => start + k)
        await Effect.runPromise(
          publishAll(batch.map((i) => statusEvent(orgIds[i % ORGS], offset + i))).pipe(
            Effect.provideService(SqlClient.SqlClient, sql)
          )
        )
        const at = performance.now() + performance.timeOrigin
        for (const i of batch) committedAt[i] = at
      }
      const deadline = Date.now() + 600_000
      while (receiver.count() < expected && Date.now() < deadline) await sleep(20)
      const benchCpu = process.cpuUsage(cpu0.bench)
      const cpu = {
        canopy: cpuMs(canopy.pid!) - cpu0.canopy,
        pg: postgresCpuMs(pgDir) - cpu0.pg,
        bench: (benchCpu.user + benchCpu.system) / 1000
      }
      const latencies: Array<number> = []
      let last = 0
      for (let i = 0; i < EVENTS; i++) {
        for (const at of receiver.arrivals.get(`mon_${offset + i}`) ?? []) {
          latencies.push(at - committedAt[i])
          last = Math.max(last, at)
        }
      }
      if (process.env.DEBUG_PHASES) {
        const commits = (await commitsNow()) - commitsBefore
        console.error(
          `[bench] Postgres commits in a round: ${commits} (${(commits / expected).toFixed(2)} per delivery)`
        )
      }
      return { latencies, rate: latencies.length / ((last - first) / 1000), cpu }
    }

    /** The same payloads posted by a bare loop. */
    const bareRound = async (offset: number) => {
      receiver.reset()
      const payloads = Array.from({ length: ORGS * HOOKS_PER_ORG }, () => [] as Array<string>)
      for (let i = 0; i < EVENTS; i++) {
        for (let h = 0; h < HOOKS_PER_ORG; h++) {
          payloads[(i % ORGS) * HOOKS_PER_ORG + h].push(JSON.stringify({
            event: "monitor.down",
            action: "down",
            organization: { id: orgIds[i % ORGS], slug: `bench-${i % ORGS}` },
            monitor: { id: `mon_${offset + i}`, name: `bench ${offset + i}`, status: "down", previousStatus: "up" },
            timestamp: new Date().toISOString()
          }))
        }
      }
      const cpu0 = process.cpuUsage()
      const ms = await bareLoop((hook) => receiver.url(`/bare/${hook}`), payloads)
      const cpu = process.cpuUsage(cpu0)
      return { rate: expected / (ms / 1000), benchCpu: (cpu.user + cpu.system) / 1000 }
    }

    // --- throughput and commit→receipt latency, taking turns with the bare loop ---------------
    const rounds: Array<{
      canopy: Awaited<ReturnType<typeof canopyRound>>
      bare: Awaited<ReturnType<typeof bareRound>>
      ratio: number
    }> = []
    for (let round = 0; round < ROUNDS; round++) {
      const canopyResult = await canopyRound(round * EVENTS)
      const bareResult = await bareRound(round * EVENTS)
      rounds.push({ canopy: canopyResult, bare: bareResult, ratio: canopyResult.rate / bareResult.rate })
      console.error(
        `[bench] round ${round + 1}: ${canopyResult.rate.toFixed(0)} against ${bareResult.rate.toFixed(0)} ` +
          `deliveries/s, ratio ${rounds[round].ratio.toFixed(2)}`
      )
    }
    const load = loadAverage()

    // --- retry lateness ---------------------------------------------------------------------
    const retryOrgs = await setUpOrgs("retry", RETRY_HOOKS, (i) => ({
      url: receiver.url(`/fail-once/${i}`),
      events: ["monitor.down"],
      retryIntervalSeconds: RETRY_INTERVAL
    }))
    await Effect.runPromise(
      publishAll(retryOrgs.map((orgId, i) => statusEvent(orgId, ROUNDS * EVENTS + i))).pipe(
        Effect.provideService(SqlClient.SqlClient, sql)
      )
    )
    const retryRows = () =>
      Effect.runPromise(sql<{ lateness: number }>`
        SELECT (extract(epoch FROM a2.started_at - a1.started_at) * 1000 - ${RETRY_INTERVAL * 1000})::float8 AS lateness
        FROM webhook_attempts a1 JOIN webhook_attempts a2 ON a2.delivery_seq = a1.delivery_seq AND a2.attempt = 2
        WHERE a1.attempt = 1`)
    const retryDeadline = Date.now() + 120_000
    let lateness = await retryRows()
    while (lateness.length < RETRY_HOOKS && Date.now() < retryDeadline) {
      await sleep(500)
      lateness = await retryRows()
    }
    const late = lateness.map((row) => row.lateness).sort((a, b) => a - b)

    const sum = (pick: (round: (typeof rounds)[number]) => number) => rounds.reduce((total, r) => total + pick(r), 0)
    const latencies = rounds.flatMap((r) => r.canopy.latencies).sort((a, b) => a - b)
    const deliveries = expected * ROUNDS
    const ratios = rounds.map((r) => r.ratio).sort((a, b) => a - b)
    printTable([
      {
        run: "canopy",
        deliveries: latencies.length,
        "deliveries/s (mean)": sum((r) => r.canopy.rate) / ROUNDS,
        "commit→receipt p50 ms": percentile(latencies, 50),
        "p99 ms": percentile(latencies, 99),
        "retry lateness p99 ms": percentile(late, 99),
        "retries measured": late.length,
        "canopy CPU µs/delivery": (sum((r) => r.canopy.cpu.canopy) * 1000) / deliveries,
        "postgres CPU µs/delivery": (sum((r) => r.canopy.cpu.pg) * 1000) / deliveries,
        "bench CPU µs/delivery": (sum((r) => r.canopy.cpu.bench) * 1000) / deliveries
      },
      {
        run: "bare node loop",
        deliveries,
        "deliveries/s (mean)": sum((r) => r.bare.rate) / ROUNDS,
        "commit→receipt p50 ms": "-",
        "p99 ms": "-",
        "retry lateness p99 ms": "-",
        "retries measured": "-",
        "canopy CPU µs/delivery": "-",
        "postgres CPU µs/delivery": "-",
        "bench CPU µs/delivery": (sum((r) => r.bare.benchCpu) * 1000) / deliveries
      }
    ])
    console.log(
      `\nratio canopy / bare loop, median of ${ROUNDS} rounds: ${percentile(ratios, 50).toFixed(2)} ` +
        `(rounds: ${rounds.map((r) => r.ratio.toFixed(2)).join(", ")}); load average ${load} (1 min)`
    )
    console.log("bench CPU: this process (publisher and receiver; for the bare loop, poster and receiver)")
  } finally {
    await close()
    await receiver.close()
  }
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})
