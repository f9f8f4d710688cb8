/**
 * `npm run bench:api`: authenticated GET /api/v1/me through the whole stack (auth, the
 * organization's rate limiter, JSON) against the smallest Effect HTTP server answering the
 * same JSON (the framework's floor), the smallest authenticated HttpApi endpoint (the HttpApi
 * floor), the same endpoint with no middleware at all, and a bare node:http server, all driven by autocannon on loopback in the same run,
 * taking turns in ROUNDS slices; then the limiter alone.
 * Env: DURATION (seconds per server, default 10), CONNECTIONS (default 50), ROUNDS (default 5).
 * `BENCH_MODE=overhead`: metrics (and with `BENCH_TRACING=1` tracing at 10%) on vs off instead
 * (bench/api-overhead.ts).
 */
import { NodeCrypto } from "@effect/platform-node"
import { Effect, Layer, Redacted } from "effect"
import { SingleRunner } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { Database } from "../services/platform/Database.ts"
import { RequestQuota } from "../services/ratelimits/RequestQuota.ts"
import { OrganizationEntityLayer } from "../src/entities/ratelimits/OrganizationEntity.ts"
import { runOverhead } from "./api-overhead.ts"
import { cpuTicksSplit } from "./process-usage.ts"
import {
  freePort,
  load,
  type LoadResult,
  percentile,
  printTable,
  startCanopyOnEmbeddedPostgres,
  startProcess,
  stop
} from "./support.ts"

const seconds = Number(process.env.DURATION ?? 10)
const connections = Number(process.env.CONNECTIONS ?? 50)
const rounds = Number(process.env.ROUNDS ?? 5)

/** Slices of one server's load as one result: mean rate and median latencies, worst p99. */
const combine = (results: ReadonlyArray<LoadResult>): LoadResult => {
  const sorted = (pick: (result: LoadResult) => number) => results.map(pick).sort((a, b) => a - b)
  return {
    requestsPerSecond: results.reduce((sum, result) => sum + result.requestsPerSecond, 0) / results.length,
    requests: results.reduce((sum, result) => sum + result.requests, 0),
    p50: percentile(sorted((result) => result.p50), 50),
    p99: Math.max(...results.map((result) => result.p99)),
    non2xx: results.reduce((sum, result) => sum + result.non2xx, 0),
    errors: results.reduce((sum, result) => sum + result.errors, 0)
  }
}

const main = async () => {
  const { admin, base, canopy, close, pg } = await startCanopyOnEmbeddedPostgres()
  // Enterprise, with the per-organization quota raised so the run measures answered requests.
  await admin("/orgs", { slug: "bench", name: "Bench", plan: "enterprise", requestsPerMinute: 100_000_000 })
  await admin("/orgs/bench/users", { username: "bench", email: "bench@example.com", role: "owner" })
  const { key } = await admin("/orgs/bench/keys", { username: "bench" })
  const headers = { authorization: `Bearer ${key}` }
  const body = await fetch(`${base}/api/v1/me`, { headers }).then((r) => r.text())

  const floorPort = await freePort()
  const effectFloor = await startProcess(
    "bench/effect-floor-server.ts",
    { PORT: String(floorPort), BODY: body },
    `http://127.0.0.1:${floorPort}/`
  )
  const httpApiPort = await freePort()
  const httpApiFloor = await startProcess(
    "bench/httpapi-floor-server.ts",
    { PORT: String(httpApiPort), BODY: body, KEY: key },
    { url: `http://127.0.0.1:${httpApiPort}/`, headers }
  )
  const unsecuredPort = await freePort()
  const unsecuredFloor = await startProcess(
    "bench/httpapi-floor-server.ts",
    { PORT: String(unsecuredPort), BODY: body, SECURITY: "none" },
    `http://127.0.0.1:${unsecuredPort}/`
  )
  const barePort = await freePort()
  const bare = await startProcess(
    "bench/bare-server.ts",
    { PORT: String(barePort), BODY: body },
    `http://127.0.0.1:${barePort}/`
  )
  const targets = {
    canopy: { url: `${base}/api/v1/me`, headers, pid: canopy.pid! },
    healthz: { url: `${base}/healthz`, headers: {}, pid: canopy.pid! },
    effectFloor: { url: `http://127.0.0.1:${floorPort}/`, headers: {}, pid: effectFloor.pid! },
    httpApiFloor: { url: `http://127.0.0.1:${httpApiPort}/`, headers, pid: httpApiFloor.pid! },
    unsecuredFloor: { url: `http://127.0.0.1:${unsecuredPort}/`, headers: {}, pid: unsecuredFloor.pid! },
    bare: { url: `http://127.0.0.1:${barePort}/`, headers: {}, pid: bare.pid! }
  }
  for (const target of Object.values(targets)) await load(target.url, { ...target, seconds: 2, connections })
  // The servers take turns in short slices, so a change in the (shared) machine's load
  // falls on all of them alike instead of on whichever ran at that moment.
  const slices: Record<keyof typeof targets, Array<LoadResult>> = {
    canopy: [],
    healthz: [],
    effectFloor: [],
    httpApiFloor: [],
    unsecuredFloor: [],
    bare: []
  }
  // Each server is one Node thread busy near 100% under this load, so its rate follows its CPU per request.
  const cpu: Record<keyof typeof targets, { user: number; system: number }> = {
    canopy: { user: 0, system: 0 },
    healthz: { user: 0, system: 0 },
    effectFloor: { user: 0, system: 0 },
    httpApiFloor: { user: 0, system: 0 },
    unsecuredFloor: { user: 0, system: 0 },
    bare: { user: 0, system: 0 }
  }
  for (let round = 0; round < rounds; round++) {
    for (const [name, target] of Object.entries(targets) as Array<[keyof typeof targets, typeof targets.canopy]>) {
      const before = cpuTicksSplit(target.pid)
      slices[name].push(await load(target.url, { ...target, seconds: seconds / rounds, connections }))
      const after = cpuTicksSplit(target.pid)
      cpu[name].user += after.user - before.user
      cpu[name].system += after.system - before.system
    }
  }
  await Promise.all([stop(canopy), stop(effectFloor), stop(httpApiFloor), stop(unsecuredFloor), stop(bare)])
  const canopyResult = combine(slices.canopy)
  const floorResult = combine(slices.healthz)
  const effectFloorResult = combine(slices.effectFloor)
  const httpApiFloorResult = combine(slices.httpApiFloor)
  const unsecuredFloorResult = combine(slices.unsecuredFloor)
  const bareResult = combine(slices.bare)

  // The limiter alone: RequestQuota.take against the organization entity on SQL storage.
  const limiterLatencies = await Effect.runPromise(Effect.scoped(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO organizations (id, slug, name, plan) VALUES ('org_limiter', 'limiter', 'L', 'enterprise')`
      const quota = yield* RequestQuota
      const latencies: Array<number> = []
      const run = (limit: number) =>
        Effect.forEach(Array.from({ length: 50 }), () =>
          Effect.gen(function*() {
            for (let i = 0; i < 400; i++) {
              const started = performance.now()
              yield* quota.take("org_limiter", limit)
              latencies.push(performance.now() - started)
            }
          }), { concurrency: 50, discard: true })
      yield* run(100_000_000)
      return latencies.sort((a, b) => a - b)
    }).pipe(
      Effect.provide(RequestQuota.layer.pipe(
        Layer.provideMerge(OrganizationEntityLayer),
        Layer.provideMerge(SingleRunner.layer({ runnerStorage: "sql" }).pipe(Layer.provide(NodeCrypto.layerDigest))),
        Layer.provideMerge(Database.layer(Redacted.make(pg.url.replace(/\/postgres$/, "/postgres"))))
      ))
    )
  ))

  await close()

  console.log(
    `\nGET /api/v1/me, ${connections} connections, ${seconds} s each in ${rounds} alternating slices, autocannon on loopback\n`
  )
  // Ticks are 10 ms of CPU; per request in µs.
  const perRequest = (ticks: number, result: LoadResult) => Math.round(ticks * 10_000 / Math.max(1, result.requests))
  const row = (server: string, result: typeof canopyResult, usage: { user: number; system: number }) => ({
    server,
    "req/s": result.requestsPerSecond,
    "p50 ms": result.p50,
    "p99 ms": result.p99,
    "non-2xx": result.non2xx,
    "server CPU µs/req user": perRequest(usage.user, result),
    "sys": perRequest(usage.system, result)
  })
  printTable([
    row("canopy GET /api/v1/me (auth + limiter + JSON)", canopyResult, cpu.canopy),
    row("canopy GET /healthz (no auth, no limiter)", floorResult, cpu.healthz),
    row("minimal Effect HTTP server, same JSON (framework floor)", effectFloorResult, cpu.effectFloor),
    row(
      "one HttpApi endpoint, bearer middleware comparing the key (HttpApi floor)",
      httpApiFloorResult,
      cpu.httpApiFloor
    ),
    row("the same HttpApi endpoint with no middleware at all", unsecuredFloorResult, cpu.unsecuredFloor),
    row("bare node:http, same JSON", bareResult, cpu.bare)
  ])
  console.log(
    `\nthroughput ratio canopy /me / Effect floor: ${
      (100 * canopyResult.requestsPerSecond / effectFloorResult.requestsPerSecond).toFixed(1)
    }% (goal >= 80%)`
  )
  console.log(
    `throughput ratio HttpApi floor / Effect floor: ${
      (100 * httpApiFloorResult.requestsPerSecond / effectFloorResult.requestsPerSecond).toFixed(1)
    }% (the most any authenticated HttpApi endpoint reaches)`
  )
  console.log(
    `throughput ratio HttpApi endpoint without middleware / Effect floor: ${
      (100 * unsecuredFloorResult.requestsPerSecond / effectFloorResult.requestsPerSecond).toFixed(1)
    }% (the most any HttpApi endpoint reaches)`
  )
  console.log(
    `throughput ratio canopy /me / HttpApi floor: ${
      (100 * canopyResult.requestsPerSecond / httpApiFloorResult.requestsPerSecond).toFixed(1)
    }% (what Canopy's own work per request leaves)`
  )
  const ratio = canopyResult.requestsPerSecond / bareResult.requestsPerSecond
  console.log(`throughput ratio canopy /me / bare: ${(ratio * 100).toFixed(1)}% (goal >= 50%)`)
  console.log(
    `throughput ratio canopy /healthz / bare: ${
      (100 * floorResult.requestsPerSecond / bareResult.requestsPerSecond).toFixed(1)
    }%`
  )
  console.log(
    `limiter alone (RequestQuota.take, 50 concurrent callers, ${limiterLatencies.length} calls): ` +
      `p50 ${percentile(limiterLatencies, 50).toFixed(3)} ms, p99 ${percentile(limiterLatencies, 99).toFixed(3)} ms, ` +
      `max ${limiterLatencies[limiterLatencies.length - 1].toFixed(3)} ms (goal p99 < 1 ms)`
  )
}
;(process.env.BENCH_MODE === "overhead" ? runOverhead() : main()).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
