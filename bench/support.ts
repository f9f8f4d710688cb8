import autocannon from "autocannon"
import { Effect, Exit, Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { freePort, startEmbeddedPostgres } from "../services/platform/EmbeddedPostgres.ts"

export interface LoadResult {
  readonly requestsPerSecond: number
  /** Requests answered in all. */
  readonly requests: number
  readonly p50: number
  readonly p99: number
  readonly non2xx: number
  readonly errors: number
}

/** Every request from a new client address, as seen through a trusted proxy (`X-Forwarded-For`). */
const fromManyClients = () => {
  let client = 0
  return [{
    setupRequest: (request: autocannon.Request) => {
      client++
      const forwarded = `10.${(client >> 16) & 255}.${(client >> 8) & 255}.${client & 255}`
      return { ...request, headers: { ...request.headers, "x-forwarded-for": forwarded } }
    }
  }]
}

/** autocannon on loopback; latencies in ms. */
export const load = (
  url: string,
  options: { headers?: Record<string, string>; seconds: number; connections: number; manyClients?: boolean }
) =>
  new Promise<LoadResult>((resolve, reject) => {
    autocannon({
      url,
      headers: options.headers ?? {},
      duration: options.seconds,
      connections: options.connections,
      pipelining: 1,
      ...(options.manyClients === true ? { requests: fromManyClients() } : {})
    }, (error, result) => {
      if (error) return reject(error)
      resolve({
        requestsPerSecond: result.requests.average,
        requests: result.requests.total,
        p50: result.latency.p50,
        p99: result.latency.p99,
        non2xx: result.non2xx,
        errors: result.errors
      })
    })
  })

/** Extra Node flags for the servers a benchmark starts, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`. */
const serverNodeArgs = (process.env.SERVER_NODE_ARGS ?? "").split(/\s+/).filter((arg) => arg.length > 0)

/** Starts a TypeScript entry point with this project's Node and waits until `readyUrl` answers. */
export const startProcess = async (
  entry: string,
  env: Record<string, string>,
  /** Probed until it answers 2xx (with these headers, if given). */
  ready: string | { readonly url: string; readonly headers: Record<string, string> },
  /** Called once the process exists, before it is ready (e.g. to put it under a CPU quota). */
  onSpawn?: (pid: number) => void
) => {
  const child = spawn("node_modules/.bin/node", [...serverNodeArgs, entry], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  if (onSpawn !== undefined) {
    try {
      onSpawn(child.pid!)
    } catch (error) {
      child.kill("SIGKILL")
      throw error
    }
  }
  let output = ""
  child.stdout!.on("data", (chunk) => output += chunk)
  child.stderr!.on("data", (chunk) => output += chunk)
  const deadline = Date.now() + 90_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${entry} exited:\n${output}`)
    // Bounded probe: a connection accepted before the server is up can otherwise hang forever.
    const probe = typeof ready === "string" ? { url: ready, headers: {} } : ready
    const answered = await fetch(probe.url, { headers: probe.headers, signal: AbortSignal.timeout(2_000) })
      .then((r) => r.ok, () => false)
    if (answered) return child
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  child.kill("SIGKILL")
  throw new Error(`${entry} did not start:\n${output}`)
}

export const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

export { freePort }

export const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]

export const printTable = (rows: ReadonlyArray<Record<string, string | number>>) => {
  const columns = Object.keys(rows[0])
  const cell = (value: string | number) => typeof value === "number" ? value.toFixed(value < 10 ? 2 : 0) : value
  const widths = columns.map((column) =>
    Math.max(column.length, ...rows.map((row) => String(cell(row[column])).length))
  )
  const line = (values: ReadonlyArray<string>) => values.map((value, i) => value.padEnd(widths[i])).join("  ")
  console.log(line(columns))
  console.log(line(widths.map((width) => "-".repeat(width))))
  for (const row of rows) console.log(line(columns.map((column) => String(cell(row[column])))))
}

/** The admin token benchmarks start Canopy with. */
export const benchAdminToken = "adm_bench_token"

/**
 * Embedded Postgres in a fresh folder and Canopy (`src/main.ts`) on it as a child process,
 * with an admin client; `close` stops both and removes the folder.
 */
export const startCanopyOnEmbeddedPostgres = async (env: Record<string, string> = {}) => {
  const scope = Effect.runSync(Scope.make())
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-bench-"))
  Fs.chmodSync(dir, 0o755)
  const pgDir = Path.join(dir, "pg")
  const pg = await Effect.runPromise(startEmbeddedPostgres({ dataDir: pgDir }).pipe(Scope.provide(scope)))
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const canopy = await startProcess("src/main.ts", {
    DATABASE_URL: pg.url,
    PORT: String(port),
    HOST: "127.0.0.1",
    ADMIN_TOKEN: benchAdminToken,
    DATA_DIR: dir,
    ...env
  }, `${base}/readyz`).catch(async (error) => {
    // Stop Postgres and remove the folder, or the failed benchmark never exits.
    await Effect.runPromise(Scope.close(scope, Exit.void))
    Fs.rmSync(dir, { recursive: true, force: true })
    throw error
  })
  /** POST to the admin API; the parsed JSON answer. */
  const admin = (path: string, body: unknown) =>
    fetch(`${base}/api/v1/admin${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${benchAdminToken}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    }).then((r) => r.json() as Promise<any>)
  const close = async () => {
    await stop(canopy)
    await Effect.runPromise(Scope.close(scope, Exit.void))
    Fs.rmSync(dir, { recursive: true, force: true })
  }
  return { scope, dir, pgDir, pg, base, canopy, admin, close }
}

/**
 * An OTLP/HTTP receiver that accepts and discards (the exporter's cost, not a collector's), in
 * a process of its own: in the benchmark's it would take CPU from autocannon while a traced
 * process is measured.
 */
const sinkSource = `
const server = require("node:http").createServer((request, response) => {
  request.resume()
  request.on("end", () => response.writeHead(200, { "content-type": "application/json" }).end("{}"))
})
server.listen(0, "127.0.0.1", () => console.log(server.address().port))
`
export const startOtlpSink = () =>
  new Promise<{ readonly port: number; readonly close: () => void }>((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", sinkSource], { stdio: ["ignore", "pipe", "inherit"] })
    child.once("error", reject)
    child.stdout!.once("data", (chunk) => resolve({ port: Number(String(chunk).trim()), close: () => child.kill() }))
  })
