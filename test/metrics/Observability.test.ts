import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { parse } from "yaml"

/**
 * The operator's side of the metrics, checked statically (no Docker engine here): every
 * metric the code defines is documented, the Grafana dashboard parses and queries only metrics
 * that exist, and the compose profile wires Prometheus and Grafana to the runners and files
 * that exist.
 */

const root = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "../..")
const read = (file: string) => Fs.readFileSync(Path.join(root, file), "utf8")

/** Metric names defined in the code: the `"canopy_…"` literals of services/metrics. */
const defined = new Set(
  ["services/metrics/Metrics.ts", "services/metrics/MetricsExporter.ts"].flatMap((file) =>
    [...read(file).matchAll(/"(canopy_[a-z_]+)"/g)].map((match) => match[1])
  )
)

/** A histogram's series names end in _bucket, _sum or _count. */
const baseName = (series: string) => series.replace(/_(bucket|sum|count)$/, "")

describe("metrics documentation", () => {
  it("documents every metric the code defines in docs/operations.md", () => {
    expect(defined.size).toBeGreaterThan(15)
    const operations = read("docs/operations.md")
    expect([...defined].filter((name) => !operations.includes(`\`${name}\``))).toEqual([])
  })

  it("names counters with _total and nothing else", () => {
    const source = read("services/metrics/Metrics.ts")
    const counters = [...source.matchAll(/counterFamily\(\s*"([a-z_]+)"/g)].map((match) => match[1])
    expect(counters.length).toBeGreaterThan(5)
    for (const counter of counters) expect(counter).toMatch(/_total$/)
  })
})

describe("docs/grafana-dashboard.json", () => {
  const dashboard = JSON.parse(read("docs/grafana-dashboard.json"))
  const panels: Array<any> = dashboard.panels
  const exprs = panels.flatMap((panel) => (panel.targets ?? []).map((target: { expr: string }) => target.expr))

  it("is a dashboard with panels that query Prometheus", () => {
    expect(dashboard.title).toBe("Canopy")
    expect(typeof dashboard.uid).toBe("string")
    expect(exprs.length).toBeGreaterThan(15)
    const ids = panels.map((panel) => panel.id)
    expect(new Set(ids).size).toBe(ids.length)
    for (const panel of panels.filter((panel) => panel.type !== "row")) {
      expect(panel.datasource, panel.title).toEqual({ type: "prometheus", uid: "${datasource}" })
    }
  })

  it("queries only metrics that exist, and shows the ones the alerts are about", () => {
    const used = new Set(exprs.flatMap((expr) => [...expr.matchAll(/\b(canopy_[a-z_]+)/g)].map((match) => match[1])))
    expect([...used].filter((series) => !defined.has(baseName(series)))).toEqual([])
    for (
      const name of [
        "canopy_monitor_check_lateness_seconds",
        "canopy_outbox_lag_seconds",
        "canopy_webhook_queue_depth",
        "canopy_ci_queue_depth",
        "canopy_nodejs_eventloop_lag_seconds"
      ]
    ) {
      expect([...used].some((series) => baseName(series) === name), name).toBe(true)
    }
  })

  it("the alert rules query only metrics that exist", () => {
    const rules = parse(read("docs/observability/alerts.yml")) as {
      groups: Array<{ rules: Array<{ alert: string; expr: string }> }>
    }
    const all = rules.groups.flatMap((group) => group.rules)
    expect(all.length).toBeGreaterThan(5)
    for (const rule of all) {
      const names = [...rule.expr.matchAll(/\b(canopy_[a-z_]+)/g)].map((match) => baseName(match[1]))
      expect(names.length, rule.alert).toBeGreaterThan(0)
      expect(names.filter((name) => !defined.has(name)), rule.alert).toEqual([])
    }
  })
})

describe("docker-compose.yml --profile observability", () => {
  const compose = parse(read("docker-compose.yml"), { merge: true }) as {
    services: Record<string, any>
    volumes?: Record<string, unknown>
  }
  const { grafana, prometheus } = compose.services

  it("adds Prometheus and Grafana under the observability profile only", () => {
    expect(prometheus.profiles).toEqual(["observability"])
    expect(grafana.profiles).toEqual(["observability"])
    expect(prometheus.image).toMatch(/^prom\/prometheus\b/)
    expect(grafana.image).toMatch(/^grafana\/grafana\b/)
    // The default stack is unchanged: no other service is in a profile.
    const profiled = Object.entries(compose.services).filter(([, service]) => service.profiles !== undefined)
    expect(profiled.map(([name]) => name).sort()).toEqual(["grafana", "prometheus"])
  })

  it("mounts files that exist, and Prometheus scrapes every runner's /metrics on its port", () => {
    for (const service of [prometheus, grafana]) {
      for (const volume of service.volumes as Array<string>) {
        const source = volume.split(":")[0]
        if (source.startsWith("./")) expect(Fs.existsSync(Path.join(root, source)), source).toBe(true)
        else expect(Object.keys(compose.volumes ?? {})).toContain(source)
      }
    }
    const config = parse(read("docs/observability/prometheus.yml")) as {
      scrape_configs: Array<{ metrics_path: string; static_configs: Array<{ targets: Array<string> }> }>
    }
    const job = config.scrape_configs[0]
    expect(job.metrics_path).toBe("/metrics")
    const runners = Object.entries(compose.services).filter(([name]) => name.startsWith("canopy-"))
    expect(runners.length).toBe(2)
    expect(job.static_configs.flatMap((entry) => entry.targets).sort()).toEqual(
      runners.map(([name, service]) => `${name}:${service.environment.PORT}`).sort()
    )
  })

  it("provisions Grafana with Prometheus as data source and the dashboard", () => {
    const datasources = parse(read("docs/observability/grafana/provisioning/datasources/prometheus.yml"))
    expect(datasources.datasources[0]).toMatchObject({ type: "prometheus", url: "http://prometheus:9090" })
    const providers = parse(read("docs/observability/grafana/provisioning/dashboards/canopy.yml"))
    const folder = providers.providers[0].options.path as string
    const mounted = (grafana.volumes as Array<string>).find((volume) =>
      volume.startsWith("./docs/grafana-dashboard.json:")
    )
    expect(mounted?.split(":")[1].startsWith(`${folder}/`)).toBe(true)
  })
})
