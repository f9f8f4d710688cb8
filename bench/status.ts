/**
 * `npm run bench:status`: the public status endpoints a busy status page and its embedded
 * badges receive (summary, widget, RSS feed, SVG badge, HTML page) on an organization with
 * 50 monitors carrying 30 days of hourly uptime rollups, 10 components and 100 incidents,
 * each measured in short rounds alternating with a bare node:http server answering the same
 * bytes (a shared machine's load drifts by the second; the median of back-to-back pairs keeps
 * each ratio honest), all driven by
 * autocannon on loopback in the same run; then the summary's 304s, a cold-cache burst per
 * endpoint, and the time from an incident opened on one runner to the summary a second
 * runner serves. Clients come from rotating addresses behind a trusted proxy
 * (`X-Forwarded-For`), as a status page's visitors do, so the per-IP limits do not cut in.
 * Env: DURATION (seconds per round, default 1), ROUNDS (pairs of rounds per endpoint, default 7),
 * CONNECTIONS (default 20).
 */
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Database } from "../services/platform/Database.ts"
import {
  benchAdminToken,
  freePort,
  load,
  type LoadResult,
  percentile,
  printTable,
  startCanopyOnEmbeddedPostgres,
  startProcess,
  stop
} from "./support.ts"

const seconds = Number(process.env.DURATION ?? 1)
const rounds = Number(process.env.ROUNDS ?? 7)
const connections = Number(process.env.CONNECTIONS ?? 20)
const MONITORS = 50
const COMPONENTS = 10
const INCIDENTS = 100
const BURST = 200
const PROPAGATION_ROUNDS = 5

const loadFromManyClients = (url: string, headers?: Record<string, string>) =>
  load(url, { seconds, connections, manyClients: true, ...(headers === undefined ? {} : { headers }) })

const median = (values: ReadonlyArray<number>) => percentile([...values].sort((a, b) => a - b), 50)

interface Paired {
  readonly name: string
  readonly bytes: number
  readonly canopy: ReadonlyArray<LoadResult>
  readonly bare: ReadonlyArray<LoadResult>
  /** Canopy's req/s over bare's, per pair of back-to-back rounds. */
  readonly ratios: ReadonlyArray<number>
}

/** `ROUNDS` pairs of rounds, the order alternating (bare first, then Canopy first, …). */
const paired = async (
  name: string,
  bytes: number,
  url: string,
  bareUrl: string,
  headers?: Record<string, string>
): Promise<Paired> => {
  const canopy: Array<LoadResult> = []
  const bare: Array<LoadResult> = []
  for (let round = 0; round < rounds; round++) {
    if (round % 2 === 0) {
      bare.push(await loadFromManyClients(bareUrl, headers))
      canopy.push(await loadFromManyClients(url, headers))
    } else {
      canopy.push(await loadFromManyClients(url, headers))
      bare.push(await loadFromManyClients(bareUrl, headers))
    }
  }
  const ratios = canopy.map((result, i) => result.requestsPerSecond / bare[i].requestsPerSecond)
  return { name, bytes, canopy, bare, ratios }
}

const main = async () => {
  const { base, canopy, close, dir, pg } = await startCanopyOnEmbeddedPostgres({ TRUSTED_PROXIES: "127.0.0.1" })

  const api = (path: string, body: unknown, token = benchAdminToken) =>
    fetch(`${base}/api/v1${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    }).then((r) => r.json() as Promise<any>)
  const org = await api("/admin/orgs", {
    slug: "bench",
    name: "Bench",
    plan: "enterprise",
    requestsPerMinute: 1_000_000
  })
  await api("/admin/orgs/bench/users", { username: "bench", email: "bench@example.com", role: "owner" })
  const { key } = await api("/admin/orgs/bench/keys", { username: "bench" })

  // Monitors as the scheduler leaves them (next check far away) with 30 days of hourly rollups.
  const monitorIds = Array.from({ length: MONITORS }, (_, i) => `mon_bench${i}`)
  await Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      for (const [i, id] of monitorIds.entries()) {
        yield* sql`
        INSERT INTO monitors (id, org_id, name, url, status, next_check_at, last_checked_at, status_since)
        VALUES (${id}, ${org.id}, ${`Service ${i}`}, 'http://127.0.0.1:9/', ${i % 10 === 0 ? "degraded" : "up"},
                now() + interval '1 day', now(), now())`
        // About 1% of hours lost a minute.
        yield* sql`
        INSERT INTO monitor_uptime_hourly (monitor_id, hour, up_ms, down_ms, checks)
        SELECT ${id}, s.h, 3600000 - s.d, s.d, 60
        FROM (
          SELECT h, CASE WHEN random() < 0.01 THEN 60000 ELSE 0 END AS d
          FROM generate_series(date_trunc('hour', now()) - interval '30 days',
                               date_trunc('hour', now()) - interval '1 hour', interval '1 hour') AS h
        ) AS s`
      }
    }).pipe(Effect.provide(Database.layer(Redacted.make(pg.url), { maxConnections: 2 })))
  )
  for (let c = 0; c < COMPONENTS; c++) {
    const members = monitorIds.slice(c * (MONITORS / COMPONENTS), (c + 1) * (MONITORS / COMPONENTS))
    await api("/components", { name: `Component ${c}`, monitorIds: members }, key)
  }
  for (let i = 0; i < INCIDENTS; i++) {
    const incident = await api("/incidents", {
      title: `Incident ${i}`,
      severity: i % 3 === 0 ? "minor" : "maintenance",
      affectedMonitors: [monitorIds[i % MONITORS]]
    }, key)
    await api(`/incidents/${incident.id}/updates`, { message: "Identified", status: "identified" }, key)
    if (i < INCIDENTS - 3) await api(`/incidents/${incident.id}/updates`, { message: "Fixed", status: "resolved" }, key)
  }

  const endpoints = [
    ["GET /api/v1/status/{slug}", `${base}/api/v1/status/bench`],
    ["GET /api/v1/widget/{slug}", `${base}/api/v1/widget/bench`],
    ["GET /api/v1/feed/{slug} (50 items)", `${base}/api/v1/feed/bench`],
    ["GET /api/v1/badge/{slug}/{id}", `${base}/api/v1/badge/bench/${monitorIds[0]}?style=flat-square`],
    ["GET /status/{slug} (HTML page)", `${base}/status/bench`]
  ] as const

  console.error("bench:status: seeded; cold burst")
  // A cold cache under a burst: the first requests after start-up, all at once.
  const burst = await Promise.all(endpoints.map(async ([name, url]) => {
    const started = performance.now()
    const latencies = await Promise.all(Array.from({ length: BURST }, async (_, i) => {
      const sent = performance.now()
      const response = await fetch(url, { headers: { "x-forwarded-for": `10.9.${i >> 8}.${i & 255}` } })
      await response.arrayBuffer()
      if (response.status !== 200) throw new Error(`${name}: ${response.status}`)
      return performance.now() - sent
    }))
    return { name, total: performance.now() - started, p99: percentile(latencies.sort((a, b) => a - b), 99) }
  }))

  // The bytes Canopy serves (uncompressed, as autocannon asks for them), with their type and ETag.
  const answers = await Promise.all(endpoints.map(async ([, url]) => {
    const response = await fetch(url, { headers: { "accept-encoding": "identity" } })
    return {
      body: Buffer.from(await response.arrayBuffer()),
      contentType: response.headers.get("content-type")!,
      etag: response.headers.get("etag")
    }
  }))
  const bodies = answers.map(({ body }) => body)
  const bareServers = await Promise.all(answers.map(async ({ body, contentType, etag }, i) => {
    const port = await freePort()
    const file = Path.join(dir, `bare-body-${i}`)
    Fs.writeFileSync(file, body)
    const server = await startProcess(
      "bench/bare-server.ts",
      { PORT: String(port), BODY_FILE: file, CONTENT_TYPE: contentType, ...(etag === null ? {} : { ETAG: etag }) },
      `http://127.0.0.1:${port}/`
    )
    return { server, url: `http://127.0.0.1:${port}/` }
  }))
  // Alternating short rounds per endpoint (bare, Canopy, Canopy, bare, …): the machine's load
  // drifts by the second, so each ratio compares two rounds taken back to back and the
  // endpoint's figure is the median of its paired ratios.
  console.error("bench:status: throughput rounds")
  const pairs: Array<Paired> = []
  await loadFromManyClients(endpoints[0][1])
  await loadFromManyClients(bareServers[0].url)
  for (const [i, [name, url]] of endpoints.entries()) {
    pairs.push(await paired(name, Buffer.byteLength(bodies[i]), url, bareServers[i].url))
  }
  // Both sides answer 304 (the bare server knows the summary's ETag).
  const etag = (await fetch(endpoints[0][1])).headers.get("etag")!
  pairs.push(
    await paired(
      "GET /api/v1/status/{slug} If-None-Match (304)",
      0,
      endpoints[0][1],
      bareServers[0].url,
      { "if-none-match": etag }
    )
  )
  await Promise.all(bareServers.map(({ server }) => stop(server)))
  // The throughput table now: a later stage that fails does not take it along.
  console.log(
    `\n${MONITORS} monitors (30 days of rollups), ${COMPONENTS} components, ${INCIDENTS} incidents; ` +
      `${connections} connections, ${seconds} s each, autocannon on loopback\n`
  )
  printTable(pairs.map(({ bare, bytes, canopy, name, ratios }) => {
    const sortedRatios = [...ratios].sort((a, b) => a - b)
    return {
      endpoint: name,
      bytes,
      "req/s": median(canopy.map((round) => round.requestsPerSecond)),
      "p50 ms": median(canopy.map((round) => round.p50)),
      "p99 ms": Math.max(...canopy.map((round) => round.p99)),
      "non-2xx": canopy.reduce((sum, round) => sum + round.non2xx, 0),
      "bare req/s": median(bare.map((round) => round.requestsPerSecond)),
      "bare p99 ms": Math.max(...bare.map((round) => round.p99)),
      "vs bare (median)": `${(100 * median(ratios)).toFixed(1)}%`,
      "range": `${(100 * sortedRatios[0]).toFixed(0)}–${(100 * sortedRatios[sortedRatios.length - 1]).toFixed(0)}%`
    }
  }))

  console.error("bench:status: propagation to a second runner")
  // An incident opened through the first runner, polled for on a second runner's summary.
  const secondPort = await freePort()
  const second = await startProcess("src/main.ts", {
    DATABASE_URL: pg.url,
    PORT: String(secondPort),
    HOST: "127.0.0.1",
    ADMIN_TOKEN: benchAdminToken,
    DATA_DIR: dir
  }, `http://127.0.0.1:${secondPort}/readyz`)
  const activeOnSecond = () =>
    // A deadline per poll: a request that never answers fails the run instead of hanging it.
    fetch(`http://127.0.0.1:${secondPort}/api/v1/status/bench`, { signal: AbortSignal.timeout(10_000) }).then((r) =>
      r.json() as Promise<any>
    ).then((s) => s.activeIncidents as number)
  /** Polls the second runner until it shows `count` active incidents; how long that took. */
  const untilSecondShows = async (count: number) => {
    const started = performance.now()
    while ((await activeOnSecond()) !== count) {
      if (performance.now() - started > 10_000) throw new Error(`the second runner never showed ${count} incidents`)
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
    return performance.now() - started
  }
  const propagation: Array<number> = []
  const quiet = await activeOnSecond()
  for (let round = 0; round < PROPAGATION_ROUNDS; round++) {
    const incident = await api("/incidents", { title: `Propagation ${round}`, severity: "minor" }, key)
    propagation.push(await untilSecondShows(quiet + 1))
    await api(`/incidents/${incident.id}/updates`, { message: "Fixed", status: "resolved" }, key)
    await untilSecondShows(quiet)
  }
  await stop(second)
  await stop(canopy)
  await close()

  console.log(`\nCold cache: ${BURST} concurrent first requests per endpoint (all endpoints at once)\n`)
  printTable(burst.map(({ name, p99, total }) => ({ endpoint: name, "all answered ms": total, "p99 ms": p99 })))
  const sorted = [...propagation].sort((a, b) => a - b)
  console.log(
    `\nIncident opened on runner 1 -> in the summary of runner 2 (${PROPAGATION_ROUNDS} rounds): ` +
      `median ${percentile(sorted, 50).toFixed(0)} ms, max ${sorted[sorted.length - 1].toFixed(0)} ms`
  )
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
