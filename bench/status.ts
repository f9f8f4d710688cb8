/**
 * `npm run bench:status`: the public status endpoints a busy status page and its embedded
 * badges receive (summary, widget, RSS feed, SVG badge) on an organization with 50
 * monitors carrying 30 days of hourly uptime rollups, 10 components and 100 incidents,
 * against a bare node:http server answering the summary's bytes, all driven by autocannon
 * on loopback in the same run. Clients come from rotating addresses behind a trusted proxy
 * (`X-Forwarded-For`), as a status page's visitors do, so the per-IP limits do not cut in.
 * Env: DURATION (seconds per endpoint, default 5), CONNECTIONS (default 20).
 */
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { Database } from "../services/platform/Database.ts"
import {
  benchAdminToken,
  freePort,
  load,
  type LoadResult,
  printTable,
  startCanopyOnEmbeddedPostgres,
  startProcess,
  stop
} from "./support.ts"

const seconds = Number(process.env.DURATION ?? 5)
const connections = Number(process.env.CONNECTIONS ?? 20)
const MONITORS = 50
const COMPONENTS = 10
const INCIDENTS = 100

const loadFromManyClients = (url: string) => load(url, { seconds, connections, manyClients: true })

const main = async () => {
  const { base, canopy, close, pg } = await startCanopyOnEmbeddedPostgres({ TRUSTED_PROXIES: "127.0.0.1" })

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
    ["GET /api/v1/badge/{slug}/{id}", `${base}/api/v1/badge/bench/${monitorIds[0]}?style=flat-square`]
  ] as const
  const summaryBody = await fetch(endpoints[0][1]).then((r) => r.text())
  const results: Array<readonly [string, LoadResult]> = []
  await loadFromManyClients(endpoints[0][1])
  for (const [name, url] of endpoints) results.push([name, await loadFromManyClients(url)])
  await stop(canopy)

  const barePort = await freePort()
  const bare = await startProcess(
    "bench/bare-server.ts",
    { PORT: String(barePort), BODY: summaryBody },
    `http://127.0.0.1:${barePort}/`
  )
  await loadFromManyClients(`http://127.0.0.1:${barePort}/`)
  const bareResult = await loadFromManyClients(`http://127.0.0.1:${barePort}/`)
  await stop(bare)
  await close()

  console.log(
    `\n${MONITORS} monitors (30 days of rollups), ${COMPONENTS} components, ${INCIDENTS} incidents; ` +
      `${connections} connections, ${seconds} s each, autocannon on loopback\n`
  )
  const row = (endpoint: string, result: LoadResult) => ({
    endpoint,
    "req/s": result.requestsPerSecond,
    "p50 ms": result.p50,
    "p99 ms": result.p99,
    "non-2xx": result.non2xx,
    "vs bare": `${(100 * result.requestsPerSecond / bareResult.requestsPerSecond).toFixed(1)}%`
  })
  printTable([
    ...results.map(([name, result]) => row(name, result)),
    row("bare node:http, the summary's bytes", bareResult)
  ])
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
