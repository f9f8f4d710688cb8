/**
 * `node bench/api-cpu.ts`: CPU time per request of Canopy processes on `GET /api/v1/me`, each
 * configuration its own process on its own embedded Postgres, loaded in alternating slices (the
 * order flips every round). CPU comes from `/proc` (every thread, user and system), so it is less
 * swayed than throughput by whatever else the shared machine runs. A diagnostic for issue 32 item 5
 * (`docs/decisions.md`, "Open: 10% sampling still costs more than its spans"), not a pass/fail benchmark.
 * Env: CONFIGS (comma-separated names below, the first is the baseline), RATE (requests/s per
 * slice, 0 = as fast as 50 connections go), SLICE (seconds), ROUNDS, COPIES (processes per
 * configuration, default 1: two processes of one configuration can measure 10–20% apart, so a few µs
 * need three or more, compared by their mean). Each process's median slice is printed too: one
 * slice that the shared machine slowed moves a mean, not a median.
 */
import autocannon from "autocannon"
import * as Fs from "node:fs"
import { startCanopyOnEmbeddedPostgres, startOtlpSink } from "./support.ts"

const rate = Number(process.env.RATE ?? 0)
const seconds = Number(process.env.SLICE ?? 5)
const rounds = Number(process.env.ROUNDS ?? 4)
const names = (process.env.CONFIGS ?? "metricsoff,metrics,r0,r01").split(",")
const copies = Number(process.env.COPIES ?? 1)

/** CPU µs by thread name (`MainThread.user`, `V8Worker.sys`…) of a process. */
const threadsOf = (pid: number) => {
  const byName = new Map<string, number>()
  for (const task of Fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = Fs.readFileSync(`/proc/${pid}/task/${task}/stat`, "utf8")
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")).replace(/[0-9]+$/, "")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      // utime and stime, in clock ticks of 10 ms
      byName.set(`${name}.user`, (byName.get(`${name}.user`) ?? 0) + Number(fields[11]) * 10_000)
      byName.set(`${name}.sys`, (byName.get(`${name}.sys`) ?? 0) + Number(fields[12]) * 10_000)
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return byName
}

const sink = await startOtlpSink()
const tracing = (ratio: string) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sink.port}`,
  OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
  OTEL_TRACES_SAMPLER_ARG: ratio
})
const configs: Record<string, Record<string, string>> = {
  metricsoff: { METRICS_ENABLED: "false" },
  metrics: {},
  r0: tracing("0"),
  r0001: tracing("0.001"),
  r001: tracing("0.01"),
  r01: tracing("0.1"),
  r1: tracing("1")
}

interface Server {
  readonly name: string
  readonly config: string
  readonly url: string
  readonly headers: Record<string, string>
  readonly pid: number
  readonly close: () => Promise<void>
  requests: number
  readonly cpu: Map<string, number>
  /** CPU µs per request of each counted slice. */
  readonly slices: Array<number>
}

const servers: Array<Server> = []
try {
  for (let copy = 1; copy <= copies; copy++) {
    for (const name of names) {
      if (configs[name] === undefined) throw new Error(`unknown configuration ${name}: ${Object.keys(configs)}`)
      const canopy = await startCanopyOnEmbeddedPostgres(configs[name])
      servers.push({
        name: copies > 1 ? `${name}#${copy}` : name,
        config: name,
        url: `${canopy.base}/api/v1/me`,
        headers: {},
        pid: canopy.canopy.pid!,
        close: canopy.close,
        requests: 0,
        cpu: new Map(),
        slices: []
      })
      await canopy.admin("/orgs", { slug: "bench", name: "Bench", plan: "enterprise", requestsPerMinute: 100_000_000 })
      await canopy.admin("/orgs/bench/users", { username: "bench", email: "bench@example.com", role: "owner" })
      const { key } = await canopy.admin("/orgs/bench/keys", { username: "bench" })
      servers[servers.length - 1].headers.authorization = `Bearer ${key}`
    }
  }
  const slice = (server: Server, duration: number, counted: boolean) =>
    new Promise<void>((resolve, reject) => {
      const before = threadsOf(server.pid)
      const pace = rate > 0 ? { connections: 20, overallRate: rate } : { connections: 50 }
      autocannon({ url: server.url, headers: server.headers, duration, ...pace }, (error, result) => {
        if (error) return reject(error)
        if (counted) {
          server.requests += result.requests.total
          let total = 0
          for (const [name, cpu] of threadsOf(server.pid)) {
            server.cpu.set(name, (server.cpu.get(name) ?? 0) + cpu - (before.get(name) ?? 0))
            total += cpu - (before.get(name) ?? 0)
          }
          server.slices.push(total / result.requests.total)
        }
        resolve()
      })
    })
  for (const server of servers) await slice(server, 3, false)
  for (let round = 0; round < rounds; round++) {
    for (const server of round % 2 === 0 ? servers : [...servers].reverse()) await slice(server, seconds, true)
  }
  /** The median slice's CPU per request. */
  const median = (server: Server) => [...server.slices].sort((a, b) => a - b)[server.slices.length >> 1]
  const perRequest = (server: Server) => [...server.cpu.values()].reduce((a, b) => a + b, 0) / server.requests
  console.log(`\nGET /api/v1/me, ${rate > 0 ? `${rate} requests/s` : "50 connections"}, ${rounds} × ${seconds} s\n`)
  for (const server of servers) {
    const threads = [...server.cpu].filter(([, cpu]) => cpu > 0).map(([name, cpu]) =>
      `${name} ${(cpu / server.requests).toFixed(1)}`
    )
    console.log(
      `${server.name.padEnd(10)} ${perRequest(server).toFixed(1).padStart(6)} µs CPU/request ` +
        `(slice median ${median(server).toFixed(1)}) ` +
        `(${(100 * perRequest(servers[0]) / perRequest(server)).toFixed(1)}% of ${servers[0].name}), ` +
        `${Math.round(server.requests / rounds / seconds)} req/s; ${threads.join(", ")}`
    )
  }
  if (copies > 1) {
    const meanOf = (measure: (server: Server) => number) => (config: string) => {
      const of = servers.filter((server) => server.config === config)
      return of.reduce((sum, server) => sum + measure(server), 0) / of.length
    }
    const mean = meanOf(perRequest)
    const medianOf = meanOf(median)
    console.log(`
means of ${copies} processes each:`)
    for (const name of names) {
      console.log(
        `${name.padEnd(10)} ${mean(name).toFixed(1).padStart(6)} µs CPU/request (${
          (mean(name) - mean(names[0])).toFixed(1)
        } over ${names[0]}); slice medians ${medianOf(name).toFixed(1)} (${
          (medianOf(name) - medianOf(names[0])).toFixed(1)
        })`
      )
    }
  }
} finally {
  await Promise.all(servers.map((server) => server.close()))
  sink.close()
}
