/**
 * `npm run bench:observe-performance`: spans written through `Performance.recordSpans` (raw span rows
 * plus hourly rollups with latency sketches, one transaction per batch, as the ingest group
 * commit does) against the raw multi-row insert of the same spans into a copy of the spans
 * table, in the same run on the same embedded Postgres: once dated over the past 30 days,
 * so every batch takes the late-span path (lock + daily upsert), and once dated within the
 * last hour, as live ingest sees them. Then the statistics query over all of them (30 days, from rollups) against the exact
 * SQL over the raw rows (`avg` + `percentile_disc(0.95)`).
 *
 * Last, what ingest pays per event for `SourceMaps.symbolicate` (20 frames): for an
 * organization without maps, and with a map (warm cache), against the one SQL lookup per
 * event it would cost without the per-runner cache.
 *
 * Env: N spans (default 1,000,000), BATCH spans per transaction (default 500), QUERIES
 * per statistics variant (default 20), EVENTS symbolicated per variant (default 20,000).
 */
import { eachMapping, TraceMap } from "@jridgewell/trace-mapping"
import { Effect, Exit, Layer, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import * as esbuild from "esbuild"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Performance, type SpanInput } from "../services/observe/Performance.ts"
import { type Frame, SourceMaps } from "../services/observe/SourceMaps.ts"
import { Database } from "../services/platform/Database.ts"
import { startEmbeddedPostgres } from "../services/platform/EmbeddedPostgres.ts"
import { layerFolder } from "../services/storage/BlobStoreFolder.ts"
import { percentile, printTable } from "./support.ts"

const N = Number(process.env.N ?? 1_000_000)
const BATCH = Number(process.env.BATCH ?? 500)
const QUERIES = Number(process.env.QUERIES ?? 20)
const EVENTS = Number(process.env.EVENTS ?? 20_000)
const DAYS = 30
const start = Date.parse("2026-10-01T00:00:00.000Z")

const names = Array.from({ length: 20 }, (_, i) => `GET /route/${i}`)
const releases = ["1.0.0", "1.1.0", "1.2.0"]
const environments = ["production", "staging"]

/** Realistic-looking spans: 20 routes, long-tailed latencies, 3% errors, spread over 30 days. */
const makeSpans = (count: number): Array<SpanInput> => {
  let seed = 42
  const next = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648
    return seed / 2_147_483_648
  }
  return Array.from({ length: count }, (_, i) => {
    const gaussian = Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next())
    return {
      traceId: `t${Math.floor(i / 5)}`,
      spanId: `s${i}`,
      ...(i % 5 === 0 ? {} : { parentId: `s${i - (i % 5)}` }),
      name: names[i % names.length],
      durationMs: Math.exp(4 + gaussian),
      status: next() < 0.03 ? "error" as const : "ok" as const,
      // Arrival order is roughly time order, as ingest sees it.
      timestamp: new Date(start + Math.floor((i / count) * DAYS * 86_400_000)),
      release: releases[Math.floor((i / count) * releases.length)],
      environment: environments[i % 7 === 0 ? 1 : 0]
    }
  })
}

const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const started = performance.now()
    yield* effect
    return performance.now() - started
  })

const main = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const perf = yield* Performance
  yield* sql`INSERT INTO organizations (id, slug, name, plan) VALUES ('org_bench', 'bench', 'Bench', 'enterprise')`
  yield* sql`CREATE TABLE spans_baseline (LIKE spans INCLUDING ALL)`
  const spans = makeSpans(N)
  const batches = Array.from({ length: Math.ceil(N / BATCH) }, (_, i) => spans.slice(i * BATCH, (i + 1) * BATCH))

  // Baseline: one multi-row INSERT of the same columns per batch, nothing else.
  const rawMs = yield* timed(Effect.forEach(batches, (batch) =>
    sql.withTransaction(sql`
      INSERT INTO spans_baseline
        (org_id, trace_id, span_id, parent_id, name, duration_ms, is_error, started_at, release, environment)
      VALUES ${
      sql.csv(batch.map((span) =>
        sql`(${"org_bench"}, ${span.traceId}, ${span.spanId}, ${span.parentId ?? null}, ${span.name},
          ${span.durationMs}, ${span.status === "error"}, ${span.timestamp.toISOString()}::timestamptz,
          ${span.release ?? null}, ${span.environment ?? null})`
      ))
    }`), { discard: true }))
  const recordMs = yield* timed(
    Effect.forEach(batches, (batch) => sql.withTransaction(perf.recordSpans("org_bench", batch)), { discard: true })
  )
  // The live path: the same spans dated within the last hour, as ingest mostly sees them
  // (written after the others, into a spans table already holding N rows).
  yield* sql`INSERT INTO organizations (id, slug, name, plan) VALUES ('org_live', 'live', 'Live', 'enterprise')`
  const now = Date.now()
  const live = batches.map((batch, b) =>
    batch.map((span) => ({ ...span, timestamp: new Date(now - 3_600_000 + (b / batches.length) * 3_500_000) }))
  )
  const liveMs = yield* timed(
    Effect.forEach(live, (batch) => sql.withTransaction(perf.recordSpans("org_live", batch)), { discard: true })
  )
  const [{ rollups }] = yield* sql<{ rollups: number }>`
    SELECT count(*)::int AS rollups FROM span_rollups_hourly WHERE org_id = 'org_bench'`
  yield* sql`VACUUM ANALYZE spans`
  yield* sql`VACUUM ANALYZE span_rollups_hourly`

  const from = new Date(start)
  const to = new Date(start + DAYS * 86_400_000 - 1)
  const latencies = (effect: Effect.Effect<unknown, unknown>) =>
    Effect.gen(function*() {
      yield* effect
      const samples: Array<number> = []
      for (let i = 0; i < QUERIES; i++) samples.push(yield* timed(effect))
      return samples.sort((a, b) => a - b)
    })
  const exact = (name?: string) =>
    sql`
      SELECT avg(duration_ms), percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_ms),
        count(*), avg(is_error::int), to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day
      FROM spans WHERE org_id = 'org_bench' AND started_at BETWEEN ${from.toISOString()}::timestamptz
        AND ${to.toISOString()}::timestamptz ${name === undefined ? sql.literal("") : sql`AND name = ${name}`}
      GROUP BY ROLLUP (day)`
  // The first query folds the 30 closed days into daily rollups, once.
  const foldMs = yield* timed(perf.stats("org_bench", { from, to, name: "warm-up" }))
  const sketchAll = yield* latencies(perf.stats("org_bench", { from, to }))
  const sketchName = yield* latencies(perf.stats("org_bench", { from, to, name: names[3] }))
  const exactAll = yield* latencies(exact())
  const exactName = yield* latencies(exact(names[3]))

  // Accuracy on the full window, for the record.
  const stats = yield* perf.stats("org_bench", { from, to })
  const [truth] = yield* sql<{ p95: number }>`
    SELECT percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_ms) AS p95 FROM spans WHERE org_id = 'org_bench'`

  console.log(`\n${N.toLocaleString()} spans in transactions of ${BATCH}, embedded Postgres, one process\n`)
  const writeRow = (writer: string, ms: number) => ({ writer, "spans/s": N / (ms / 1000), "total s": ms / 1000 })
  printTable([
    writeRow("raw multi-row INSERT (baseline)", rawMs),
    writeRow("recordSpans, spans of the last hour (live path)", liveMs),
    writeRow("recordSpans, spans of closed days (late-span path)", recordMs)
  ])
  console.log(
    `\nwrite ratio recordSpans / raw insert: ${(100 * rawMs / liveMs).toFixed(1)}% live, ${
      (100 * rawMs / recordMs).toFixed(1)
    }% late  (${rollups} rollup rows over 30 days)`
  )
  console.log(`\nstatistics over ${DAYS} days, ${QUERIES} queries each\n`)
  const queryRow = (query: string, samples: ReadonlyArray<number>) => ({
    query,
    "p50 ms": percentile(samples, 50),
    "p99 ms": percentile(samples, 99)
  })
  printTable([
    queryRow("first stats query (folds 30 closed days)", [foldMs]),
    queryRow("stats from rollups, all spans", sketchAll),
    queryRow("stats from rollups, one name", sketchName),
    queryRow("exact SQL over raw spans, all (baseline)", exactAll),
    queryRow("exact SQL over raw spans, one name (baseline)", exactName)
  ])
  console.log(
    `\nquery speed-up rollups vs exact: ${(percentile(exactAll, 50) / percentile(sketchAll, 50)).toFixed(1)}× (all), ${
      (percentile(exactName, 50) / percentile(sketchName, 50)).toFixed(1)
    }× (one name)`
  )
  console.log(
    `p95 from sketches ${stats.p95Latency.toFixed(3)} ms vs exact ${truth.p95.toFixed(3)} ms: ${
      (100 * Math.abs(stats.p95Latency - truth.p95) / truth.p95).toFixed(3)
    }% off (bound 1%)`
  )

  yield* symbolication
})

/** A minified bundle of 200 functions and 20-frame stacks at real mapped positions in it. */
const minifiedBundle = Effect.promise(async () => {
  const source = Array.from(
    { length: 200 },
    (_, i) =>
      `export function handler${i}(input) {\n  const value = input.items.map((item) => item.price * ${i})\n` +
      `  if (value.length === 0) throw new Error("empty ${i}")\n  return value.reduce((a, b) => a + b, 0)\n}\n`
  ).join("")
  const result = await esbuild.build({
    stdin: { contents: source, sourcefile: "src/handlers.js" },
    outfile: "dist/app.min.js",
    bundle: true,
    minify: true,
    format: "iife",
    globalName: "App",
    sourcemap: "external",
    write: false
  })
  const map = result.outputFiles.find((file) => file.path.endsWith(".map"))!.text
  const positions: Array<{ line: number; column: number }> = []
  eachMapping(new TraceMap(map), (mapping) => {
    positions.push({ line: mapping.generatedLine, column: mapping.generatedColumn })
  })
  const frames: Array<Frame> = Array.from({ length: 20 }, (_, i) => {
    const position = positions[Math.floor((i / 20) * positions.length)]
    return {
      filename: "https://cdn.example.com/static/app.min.js",
      function: "x",
      lineno: position.line,
      colno: position.column + 1,
      in_app: true
    }
  })
  return { map, frames }
})

const symbolication = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const sourceMaps = yield* SourceMaps
  const { frames, map } = yield* minifiedBundle
  yield* sql`INSERT INTO organizations (id, slug, name, plan) VALUES ('org_maps', 'maps', 'Maps', 'enterprise')`
  yield* sourceMaps.upload("org_maps", { release: "1.0.0", name: "~/static/app.min.js", content: Buffer.from(map) })
  const perEvent = (effect: Effect.Effect<unknown, unknown>) =>
    Effect.gen(function*() {
      yield* effect
      const ms = yield* timed(Effect.forEach(Array.from({ length: EVENTS }), () => effect, { discard: true }))
      return (ms * 1000) / EVENTS
    })
  const none = yield* perEvent(sourceMaps.symbolicate("org_bench", "1.0.0", frames))
  const mapped = yield* perEvent(sourceMaps.symbolicate("org_maps", "1.0.0", frames))
  const lookup = yield* perEvent(sql`SELECT id, name FROM source_maps WHERE org_id = 'org_bench' AND release = '1.0.0'`)
  console.log(`\nsymbolicate, 20 frames per event, ${EVENTS.toLocaleString()} events each\n`)
  printTable([
    { variant: "organization without maps (cached)", "µs/event": none },
    { variant: "with a map (parsed map cached)", "µs/event": mapped },
    { variant: "one SQL lookup per event (baseline)", "µs/event": lookup }
  ])
  console.log(`\nno-maps path vs a lookup per event: ${(lookup / none).toFixed(0)}× cheaper`)
})

const run = async () => {
  const scope = Effect.runSync(Scope.make())
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-bench-"))
  Fs.chmodSync(dir, 0o755)
  try {
    const pg = await Effect.runPromise(
      startEmbeddedPostgres({ dataDir: Path.join(dir, "pg") }).pipe(Scope.provide(scope))
    )
    await Effect.runPromise(main.pipe(
      Effect.provide(
        Layer.mergeAll(Performance.layer, SourceMaps.layer).pipe(
          Layer.provideMerge(layerFolder(Path.join(dir, "blobs"))),
          Layer.provideMerge(Database.layer(Redacted.make(pg.url)))
        )
      )
    ))
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    Fs.rmSync(dir, { recursive: true, force: true })
  }
}

run().catch((error) => {
  console.error(error)
  process.exit(1)
})
