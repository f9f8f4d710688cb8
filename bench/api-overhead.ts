/**
 * `BENCH_MODE=overhead npm run bench:api`: the cost of observability on the API (issue 32 item 5).
 * Two Canopy processes, each on its own embedded Postgres, take the same load on
 * `GET /api/v1/me` in alternating slices (the order flips every round, so a change in the shared
 * machine's load falls on both alike): one with metrics on (the default), one with
 * `METRICS_ENABLED=false`. `BENCH_TRACING=1` also gives the "on" process OTLP tracing sampled at
 * 10% (the standard `OTEL_*` variables), exported to a loopback sink that answers 200. A scraper
 * reads `/metrics` every 15 s during the run, as Prometheus would.
 * Two processes of one configuration can measure 10% apart on this shared machine, and one slice
 * the machine slowed moves a mean: `COPIES=3` runs three processes per side, and the ratio of the
 * median slices is printed beside the ratio of the means.
 * Env: DURATION (seconds per process, default 10), CONNECTIONS (default 50), ROUNDS (default 5),
 * COPIES (processes per side, default 1), BENCH_TRACING_RATIO (the "on" side's sampling ratio, default 0.1).
 */
import {
  load,
  type LoadResult,
  percentile,
  printTable,
  startCanopyOnEmbeddedPostgres,
  startOtlpSink
} from "./support.ts"

const seconds = Number(process.env.DURATION ?? 10)
const connections = Number(process.env.CONNECTIONS ?? 50)
const rounds = Number(process.env.ROUNDS ?? 5)
const copies = Number(process.env.COPIES ?? 1)
const tracing = process.env.BENCH_TRACING === "1"
/** The "on" side's sampling ratio with `BENCH_TRACING=1` (the issue's 10% unless told). */
const tracingRatio = process.env.BENCH_TRACING_RATIO ?? "0.1"

const combine = (results: ReadonlyArray<LoadResult>) => ({
  requestsPerSecond: results.reduce((sum, result) => sum + result.requestsPerSecond, 0) / results.length,
  p50: percentile(results.map((result) => result.p50).sort((a, b) => a - b), 50),
  p99: Math.max(...results.map((result) => result.p99)),
  non2xx: results.reduce((sum, result) => sum + result.non2xx, 0)
})

const startWithKey = async (env: Record<string, string>) => {
  const canopy = await startCanopyOnEmbeddedPostgres(env)
  await canopy.admin("/orgs", { slug: "bench", name: "Bench", plan: "enterprise", requestsPerMinute: 100_000_000 })
  await canopy.admin("/orgs/bench/users", { username: "bench", email: "bench@example.com", role: "owner" })
  const { key } = await canopy.admin("/orgs/bench/keys", { username: "bench" })
  return { ...canopy, headers: { authorization: `Bearer ${key}` } }
}

/** The median slice's requests per second. */
const medianRate = (results: ReadonlyArray<LoadResult>) =>
  percentile(results.map((result) => result.requestsPerSecond).sort((a, b) => a - b), 50)

export const runOverhead = async () => {
  const sink = tracing ? await startOtlpSink() : undefined
  const onEnv: Record<string, string> = sink === undefined ? {} : {
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sink.port}`,
    OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
    OTEL_TRACES_SAMPLER_ARG: tracingRatio
  }
  // Started alternately (on, off, on, off…), so neither side is always the older process.
  const targets: Array<{ readonly side: "on" | "off"; readonly target: Awaited<ReturnType<typeof startWithKey>> }> = []
  let scraper: ReturnType<typeof setInterval> | undefined
  try {
    for (let copy = 0; copy < copies; copy++) {
      targets.push({ side: "on", target: await startWithKey(onEnv) })
      targets.push({ side: "off", target: await startWithKey({ METRICS_ENABLED: "false" }) })
    }
    const onTargets = targets.filter(({ side }) => side === "on").map(({ target }) => target)
    for (const { side, target } of targets) {
      if (side === "off" && (await fetch(`${target.base}/metrics`)).status !== 404) {
        throw new Error(`an "off" process serves /metrics`)
      }
    }
    scraper = setInterval(() => {
      for (const on of onTargets) void fetch(`${on.base}/metrics`).then((r) => r.text(), () => "")
    }, 15_000)
    for (const { target } of targets) {
      await load(`${target.base}/api/v1/me`, { headers: target.headers, seconds: 2, connections })
    }
    const slices: Record<"on" | "off", Array<LoadResult>> = { on: [], off: [] }
    for (let round = 0; round < rounds; round++) {
      for (const { side, target } of round % 2 === 0 ? targets : [...targets].reverse()) {
        slices[side].push(
          await load(`${target.base}/api/v1/me`, { headers: target.headers, seconds: seconds / rounds, connections })
        )
      }
    }
    for (const on of onTargets) {
      const scraped = await fetch(`${on.base}/metrics`).then((r) => r.text())
      if (!scraped.includes("canopy_http_requests_total")) throw new Error("an \"on\" process counted nothing")
    }
    const [onResult, offResult] = [combine(slices.on), combine(slices.off)]
    console.log(
      `\nGET /api/v1/me, ${connections} connections, ${seconds} s per process in ${rounds} alternating slices, ` +
        `${copies} process${copies > 1 ? "es" : ""} per side, autocannon on loopback\n`
    )
    const row = (name: string, result: typeof onResult, median: number) => ({
      server: name,
      "req/s": Math.round(result.requestsPerSecond),
      "median slice req/s": Math.round(median),
      "p50 ms": result.p50,
      "p99 ms": result.p99,
      "non-2xx": result.non2xx
    })
    printTable([
      row(
        `metrics on${tracing ? ` + tracing at ${+(100 * Number(tracingRatio)).toFixed(2)}%` : ""} (scraped every 15 s)`,
        onResult,
        medianRate(slices.on)
      ),
      row("metrics off (METRICS_ENABLED=false)", offResult, medianRate(slices.off))
    ])
    const ratio = onResult.requestsPerSecond / offResult.requestsPerSecond
    const medianRatio = medianRate(slices.on) / medianRate(slices.off)
    console.log(
      `\nthroughput ratio on / off: ${(100 * ratio).toFixed(1)}% (median slices: ${
        (100 * medianRatio).toFixed(1)
      }%; goal >= 90%: observability within 10%)`
    )
  } finally {
    if (scraper !== undefined) clearInterval(scraper)
    await Promise.all(targets.map(({ target }) => target.close()))
    sink?.close()
  }
}
