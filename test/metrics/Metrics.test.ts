import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import parsePrometheus, { type Family } from "parse-prometheus-text-format"
import { shardsPerGroup } from "../../layers/Cluster.ts"
import type { MetricsConfig } from "../../services/platform/AppConfig.ts"
import { freePort } from "../../services/platform/EmbeddedPostgres.ts"
import { createRepo, gitClient, pushedWorkTree } from "../git/gitClient.ts"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"

/**
 * `GET /metrics` of a real app, parsed by a Prometheus text parser from npm: counters move
 * by exactly the requests made, labelled by route template; the token, the separate port and
 * the per-organization label do what docs/operations.md says.
 */

const metricsConfig = (overrides: Partial<MetricsConfig>): MetricsConfig => ({
  enabled: true,
  token: Option.none(),
  port: Option.none(),
  perOrg: false,
  ...overrides
})

const scrapeText = (url: string, token?: string) =>
  Effect.promise(async () => {
    const response = await fetch(url, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } })
    return { status: response.status, contentType: response.headers.get("content-type"), text: await response.text() }
  })

/**
 * The parsed body. The parser folds a histogram's labelled series into one (it keeps
 * prom2json's shape for unlabelled ones only), so each histogram's `_count` series are also
 * parsed on their own, as the counter family `<name>_count`.
 */
const scrape = (url: string, token?: string) =>
  Effect.map(scrapeText(url, token), (response) => {
    expect(response.status, response.text).toBe(200)
    expect(response.contentType).toMatch(/^text\/plain; version=0\.0\.4/)
    const families = parsePrometheus(response.text)
    const counts = families.filter((family) => family.type === "HISTOGRAM").map((family) => {
      const lines = response.text.split("\n").filter((line) =>
        line.startsWith(`${family.name}_count{`) || line.startsWith(`${family.name}_count `)
      )
      return `# TYPE ${family.name}_count counter\n${lines.join("\n")}\n`
    })
    return [...families, ...parsePrometheus(counts.join(""))]
  })

const familyOf = (families: ReadonlyArray<Family>, name: string) => families.find((family) => family.name === name)

/** The sum of a counter's (or gauge's) series whose labels include `labels`; 0 when none. */
const valueOf = (families: ReadonlyArray<Family>, name: string, labels: Record<string, string> = {}) =>
  (familyOf(families, name)?.metrics ?? [])
    .filter((sample) => Object.entries(labels).every(([key, value]) => sample.labels?.[key] === value))
    .reduce((sum, sample) => sum + Number(sample.value ?? sample.count ?? 0), 0)

const labelNames = (families: ReadonlyArray<Family>) =>
  new Set(
    families.filter((family) => family.name.startsWith("canopy_")).flatMap((family) =>
      family.metrics.flatMap((sample) => Object.keys(sample.labels ?? {}))
    )
  )

/** A local target for a monitor: answers 200. */
const startTarget = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<Http.Server>((resolve) => {
      const server = Http.createServer((_request, response) => response.end("ok"))
      server.listen(0, "127.0.0.1", () => resolve(server))
    })
  ),
  (server) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
)

describe("GET /metrics", () => {
  it.live(
    "counts requests by route template, method and status; checks, ingest and limits; no org label",
    () =>
      Effect.gen(function*() {
        const app = yield* startApp()
        const { key, org } = yield* bootstrapOrg(app.baseUrl, { slug: "metrics-default", plan: "enterprise" })
        const target = yield* startTarget
        const before = yield* scrape(`${app.baseUrl}/metrics`)

        for (let i = 0; i < 3; i++) {
          expect((yield* request(`${app.baseUrl}/api/v1/me`, { token: key })).status).toBe(200)
        }
        const mid = yield* scrape(`${app.baseUrl}/metrics`)
        // Each call took one decision of the organization's quota.
        const allowed = { limiter: "request", decision: "allowed" }
        expect(
          valueOf(mid, "canopy_ratelimit_decisions_total", allowed) -
            valueOf(before, "canopy_ratelimit_decisions_total", allowed)
        )
          .toBe(3)
        // Three ids, one route: the label is the template, never the raw path.
        for (const id of ["mon_aaaaaaaa", "mon_bbbbbbbb", "mon_cccccccc"]) {
          expect((yield* request(`${app.baseUrl}/api/v1/monitors/${id}`, { token: key })).status).toBe(404)
        }
        const port = (target.address() as AddressInfo).port
        const monitor = yield* request(`${app.baseUrl}/api/v1/monitors`, {
          method: "POST",
          token: key,
          body: { name: "Local", url: `http://127.0.0.1:${port}/health` }
        })
        expect(monitor.status, JSON.stringify(monitor.body)).toBe(201)
        const ingest = yield* request(`${app.baseUrl}/api/v1/observe/ingest`, {
          method: "POST",
          token: key,
          body: { events: [{ message: "metrics boom", level: "error" }, { level: "error" }] }
        })
        expect(ingest.status, JSON.stringify(ingest.body)).toBe(202)

        const after = yield* eventually(
          "the monitor's first check in the metrics",
          scrape(`${app.baseUrl}/metrics`),
          // A delta: the registry is the process's, and an earlier test file in this worker may have counted checks.
          (families) =>
            valueOf(families, "canopy_monitor_checks_total", { type: "http", result: "up" }) -
                valueOf(before, "canopy_monitor_checks_total", { type: "http", result: "up" }) >= 1
        )
        const delta = (name: string, labels: Record<string, string>) =>
          valueOf(after, name, labels) - valueOf(before, name, labels)

        expect(delta("canopy_http_requests_total", { route: "/api/v1/me", method: "GET", status: "200" })).toBe(3)
        expect(delta("canopy_http_requests_total", { route: "/api/v1/monitors/:id", method: "GET", status: "404" }))
          .toBe(3)
        expect(delta("canopy_http_request_duration_seconds_count", { route: "/api/v1/me", method: "GET" })).toBe(3)
        const routes = familyOf(after, "canopy_http_requests_total")!.metrics.map((sample) => sample.labels?.route)
        expect(routes.filter((route) => route?.includes("mon_"))).toEqual([])
        expect(delta("canopy_monitor_checks_total", { type: "http", result: "up" })).toBe(1)
        expect(valueOf(after, "canopy_monitor_check_lateness_seconds_count")).toBeGreaterThanOrEqual(1)
        expect(delta("canopy_ingest_events_total", { outcome: "accepted" })).toBe(1)
        expect(delta("canopy_ingest_events_total", { outcome: "dropped", reason: "invalid" })).toBe(1)
        expect(delta("canopy_ingest_commit_events_count", {})).toBe(1)
        // Gauges read at scrape time are there, with sane values.
        expect(familyOf(after, "canopy_webhook_queue_depth")?.type).toBe("GAUGE")
        expect(valueOf(after, "canopy_ci_queue_depth")).toBe(0)
        // The single runner holds both shard groups (CI_WORKER defaults to true).
        expect(valueOf(after, "canopy_cluster_shards_held", { group: "default" })).toBe(shardsPerGroup)
        expect(valueOf(after, "canopy_cluster_shards_held", { group: "ci" })).toBe(shardsPerGroup)
        expect(valueOf(after, "canopy_nodejs_heap_used_bytes")).toBeGreaterThan(1_000_000)
        expect(familyOf(after, "canopy_outbox_lag_seconds")?.metrics.length).toBeGreaterThan(0)
        // No series names the organization (the registry is the process's: other files' apps
        // may have left labelled series, never this one's).
        expect(JSON.stringify(after)).not.toContain(org.id)
      }),
    { timeout: 120_000 }
  )

  it.live("requires METRICS_TOKEN as a bearer token when one is set", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ metrics: metricsConfig({ token: Option.some(Redacted.make("scrape-secret")) }) })
      const missing = yield* scrapeText(`${app.baseUrl}/metrics`)
      expect(missing.status).toBe(401)
      expect(JSON.parse(missing.text).error).toBe("unauthorized")
      expect((yield* scrapeText(`${app.baseUrl}/metrics`, "wrong-secret")).status).toBe(401)
      const families = yield* scrape(`${app.baseUrl}/metrics`, "scrape-secret")
      expect(familyOf(families, "canopy_http_requests_total")).toBeDefined()
      expect(valueOf(families, "canopy_http_requests_total", { route: "/metrics", status: "401" })).toBe(2)
    }), { timeout: 120_000 })

  it.live(
    "serves on METRICS_PORT alone when set, and labels org series with METRICS_PER_ORG",
    () =>
      Effect.gen(function*() {
        const port = yield* Effect.promise(freePort)
        const app = yield* startApp({ metrics: metricsConfig({ port: Option.some(port), perOrg: true }) })
        const { key, org } = yield* bootstrapOrg(app.baseUrl, { slug: "metrics-per-org", plan: "enterprise" })
        expect((yield* scrapeText(`${app.baseUrl}/metrics`)).status).toBe(404)
        const before = yield* scrape(`http://127.0.0.1:${port}/metrics`)
        expect((yield* request(`${app.baseUrl}/api/v1/me`, { token: key })).status).toBe(200)
        const ingest = yield* request(`${app.baseUrl}/api/v1/observe/ingest`, {
          method: "POST",
          token: key,
          body: { message: "per org", level: "error" }
        })
        expect(ingest.status).toBe(202)
        const families = yield* scrape(`http://127.0.0.1:${port}/metrics`)
        expect(labelNames(families).has("org")).toBe(true)
        expect(valueOf(families, "canopy_ingest_events_total", { outcome: "accepted", org: org.id })).toBe(1)
        expect(valueOf(families, "canopy_ratelimit_decisions_total", { limiter: "request", org: org.id })).toBe(1)
        // The main port's requests are still counted, without an org label.
        const ingested = { route: "/api/v1/observe/ingest", method: "POST", status: "202" }
        const requests = (scraped: ReadonlyArray<Family>) => valueOf(scraped, "canopy_http_requests_total", ingested)
        expect(requests(families) - requests(before)).toBe(1)
        const other = yield* scrapeText(`http://127.0.0.1:${port}/api/v1/me`)
        expect(other.status).toBe(404)
      }),
    { timeout: 120_000 }
  )

  it.live("counts a git push and a fetch with their pack bytes", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const repo = yield* createRepo(app.baseUrl, { slug: "metrics-git" })
      const git = yield* gitClient
      const before = yield* scrape(`${app.baseUrl}/metrics`)
      yield* pushedWorkTree(git, repo.url)
      yield* git.ok(["clone", "-q", repo.url, git.dir("clone")])
      const after = yield* scrape(`${app.baseUrl}/metrics`)
      const delta = (name: string, labels: Record<string, string>) =>
        valueOf(after, name, labels) - valueOf(before, name, labels)
      expect(delta("canopy_git_operations_total", { operation: "push" })).toBe(1)
      expect(delta("canopy_git_operations_total", { operation: "fetch" })).toBe(1)
      expect(delta("canopy_git_bytes_total", { direction: "received" })).toBeGreaterThan(100)
      expect(delta("canopy_git_bytes_total", { direction: "sent" })).toBeGreaterThan(100)
      const routes = familyOf(after, "canopy_http_requests_total")!.metrics.map((sample) => sample.labels?.route)
      expect(routes).toContain("/:org/:repo/git-receive-pack")
      expect(routes.filter((route) => route?.includes("metrics-git"))).toEqual([])
    }), { timeout: 120_000 })
})
