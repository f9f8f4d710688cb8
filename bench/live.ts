/**
 * `npm run bench:live`: CLIENTS WebSocket clients (default 5000) on one Canopy runner's
 * public live stream (`src/main.ts` as a separate process on a temporary Postgres), then
 * EVENTS incident events (default 20, every INTERVAL_MS, default 500) published into the
 * Events outbox in their own transactions, as the incidents service does. Reports, per
 * system: delivery latency p50/p99/max across every (client, event) pair (publish call to
 * the client's `message` event, one clock), the share delivered, RSS per idle connection
 * (RSS after connecting minus before, over CLIENTS) and the server's CPU while publishing.
 *
 * The baseline, in the same run, is a bare `ws` server (`bench/bare-ws-server.ts`, no
 * database, no Effect) fanning the same payload out to the same number of clients; the
 * ratio row divides Canopy's figures by it.
 */
import { Effect, Exit, Scope } from "effect"
import type { ChildProcess } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { WebSocket } from "ws"
import { startEmbeddedPostgres } from "../services/platform/EmbeddedPostgres.ts"
import { freePort, percentile, printTable, startProcess, stop } from "./support.ts"

const env = (name: string, fallback: number) => {
  const value = process.env[name]
  return value === undefined || value === "" ? fallback : Number(value)
}
const CLIENTS = env("CLIENTS", 5000)
const EVENTS = env("EVENTS", 20)
const INTERVAL_MS = env("INTERVAL_MS", 500)
/** Idle time after connecting before the RSS is read. */
const SETTLE_MS = env("SETTLE_MS", 5000)
const ADMIN_TOKEN = "adm_bench_live"

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

const procStat = (pid: number) => {
  const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return { ticks: Number(fields[11]) + Number(fields[12]), rss: Number(fields[21]) * 4096 }
}

/** The bare server's data for event `seq`: the shape and size of Canopy's `incident.created` data. */
const barePayload = (seq: number) => {
  const now = new Date().toISOString()
  const update = {
    id: `upd_bench_${seq}`,
    status: "investigating",
    message: "Investigating elevated errors",
    createdAt: now
  }
  return {
    incident: {
      id: `inc_bench_${seq}`,
      title: `bench-${seq}`,
      description: "Latency benchmark incident",
      status: "investigating",
      severity: "minor",
      affectedMonitors: [],
      createdAt: now,
      updatedAt: now,
      resolvedAt: null,
      updates: [update]
    },
    update
  }
}

interface Run {
  readonly system: string
  readonly latencies: Array<number>
  readonly delivered: number
  readonly kibPerConnection: number
  readonly cpuPercent: number
}

const marker = Buffer.from("\"title\":\"bench-")

/** Opens `CLIENTS` sockets (200 at a time); each records when it received each event. */
const connectAll = async (url: string, received: Array<Map<number, number>>) => {
  const sockets: Array<WebSocket> = []
  for (let start = 0; start < CLIENTS; start += 200) {
    await Promise.all(
      Array.from({ length: Math.min(200, CLIENTS - start) }, (_, k) =>
        new Promise<void>((resolve, reject) => {
          const arrivals = new Map<number, number>()
          received[start + k] = arrivals
          const ws = new WebSocket(url, { perMessageDeflate: false, skipUTF8Validation: true })
          // The client process handles CLIENTS messages per event: find the marker natively.
          ws.on("message", (data: Buffer) => {
            const at = Date.now()
            const index = data.indexOf(marker)
            if (index < 0) return
            const seq = parseInt(data.toString("latin1", index + marker.length, index + marker.length + 8), 10)
            if (!arrivals.has(seq)) arrivals.set(seq, at)
          })
          ws.once("open", () => resolve())
          ws.once("error", reject)
          sockets.push(ws)
        }))
    )
  }
  return sockets
}

const measure = async (
  system: string,
  pid: number,
  url: string,
  publishOne: (seq: number) => Promise<void>
): Promise<Run> => {
  await sleep(2000)
  const before = procStat(pid).rss
  const received: Array<Map<number, number>> = []
  const sockets = await connectAll(url, received)
  await sleep(SETTLE_MS)
  const idle = procStat(pid).rss
  console.error(`[bench] ${system}: ${sockets.length} clients connected`)

  const sentAt: Array<number> = []
  const cpu0 = procStat(pid).ticks
  const t0 = performance.now()
  for (let seq = 0; seq < EVENTS; seq++) {
    sentAt[seq] = Date.now()
    await publishOne(seq)
    await sleep(INTERVAL_MS)
  }
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline && received.some((arrivals) => arrivals.size < EVENTS)) await sleep(200)
  const cpuPercent = ((procStat(pid).ticks - cpu0) / 100 / ((performance.now() - t0) / 1000)) * 100

  const latencies: Array<number> = []
  for (const arrivals of received) for (const [seq, at] of arrivals) latencies.push(at - sentAt[seq])
  for (const ws of sockets) ws.terminate()
  return {
    system,
    latencies: latencies.sort((a, b) => a - b),
    delivered: latencies.length / (CLIENTS * EVENTS),
    kibPerConnection: (idle - before) / CLIENTS / 1024,
    cpuPercent
  }
}

const main = async () => {
  const scope = await Effect.runPromise(Scope.make())
  const pgDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-bench-live-pg-"))
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-bench-live-data-"))
  const children: Array<ChildProcess> = []
  try {
    const pg = await Effect.runPromise(startEmbeddedPostgres({ dataDir: pgDir }).pipe(Scope.provide(scope)))
    const port = await freePort()
    const canopy = await startProcess("src/main.ts", {
      DATABASE_URL: pg.url,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      ADMIN_TOKEN
    }, `http://127.0.0.1:${port}/readyz`)
    children.push(canopy)
    const admin = (path: string, body: unknown) =>
      fetch(`http://127.0.0.1:${port}/api/v1/admin${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify(body)
      }).then((response) => response.json())
    await admin("/orgs", { slug: "bench", name: "Bench", plan: "enterprise" })
    await admin("/orgs/bench/users", { username: "bench", email: "bench@example.com", role: "owner" })
    const { key } = await admin("/orgs/bench/keys", { username: "bench" }) as { key: string }

    const barePort = await freePort()
    const bare = await startProcess(
      "bench/bare-ws-server.ts",
      { PORT: String(barePort) },
      `http://127.0.0.1:${barePort}/`
    )
    children.push(bare)

    const runs = [
      await measure("canopy", canopy.pid!, `ws://127.0.0.1:${port}/api/v1/live/bench`, async (seq) => {
        const response = await fetch(`http://127.0.0.1:${port}/api/v1/incidents`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ title: `bench-${seq}`, description: "Latency benchmark incident" })
        })
        if (response.status !== 201) throw new Error(`create incident: ${response.status} ${await response.text()}`)
      }),
      await measure("bare ws", bare.pid!, `ws://127.0.0.1:${barePort}/`, async (seq) => {
        await fetch(`http://127.0.0.1:${barePort}/publish`, { method: "POST", body: JSON.stringify(barePayload(seq)) })
      })
    ]
    const rows = runs.map((run) => ({
      system: run.system,
      clients: CLIENTS,
      events: EVENTS,
      delivered: `${(run.delivered * 100).toFixed(1)}%`,
      p50ms: percentile(run.latencies, 50),
      p99ms: percentile(run.latencies, 99),
      maxMs: run.latencies.at(-1) ?? 0,
      kibPerConn: run.kibPerConnection,
      cpuPercent: run.cpuPercent
    }))
    const [ours, base] = rows
    printTable([...rows, {
      system: "ratio canopy/bare",
      clients: CLIENTS,
      events: EVENTS,
      delivered: "",
      p50ms: ours.p50ms / Math.max(1, base.p50ms),
      p99ms: ours.p99ms / Math.max(1, base.p99ms),
      maxMs: ours.maxMs / Math.max(1, base.maxMs),
      kibPerConn: ours.kibPerConn / Math.max(0.01, base.kibPerConn),
      cpuPercent: ours.cpuPercent / Math.max(0.01, base.cpuPercent)
    }])
  } finally {
    for (const child of children) await stop(child)
    await Effect.runPromise(Scope.close(scope, Exit.void))
    Fs.rmSync(dataDir, { recursive: true, force: true })
    Fs.rmSync(pgDir, { recursive: true, force: true })
  }
}

await main()
