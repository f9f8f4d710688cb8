import { expect, layer } from "@effect/vitest"
import { Context, Effect, Exit, Layer } from "effect"
import { EventPreparation, makePreparation } from "../../services/observe/EventPreparation.ts"
import type { BodyPreparation, PrepareBody } from "../../services/observe/PreparationWorkers.ts"
import { preparationWorkers } from "../../services/observe/PreparationWorkers.ts"
import { SourceMaps } from "../../services/observe/SourceMaps.ts"
import { makeWorkerPool, type WorkerPool } from "../../services/platform/WorkerPool.ts"
import { bootstrapOrg, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { errorEvent, ingest } from "./support.ts"

/**
 * Ingest bodies prepared on worker threads give exactly what the server's own path gives
 * (ids aside: they are random), source maps included, and a worker that dies loses nothing.
 */
class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly sourceMaps: SourceMaps["Service"]
  readonly preparation: EventPreparation["Service"]
}>()("test/observe/PreparationWorkersApp") {}

const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(startApp(), (app) => {
    const context = app.context as Context.Context<SourceMaps | EventPreparation>
    return {
      baseUrl: app.baseUrl,
      sourceMaps: Context.get(context, SourceMaps),
      preparation: Context.get(context, EventPreparation)
    }
  })
)

const scriptUrl = "https://cdn.example.com/static/app.min.js"

/** A hand-written map of one minified line: column 0 is `parseOrder` (line 6), column 13 `checkLine` (line 8). */
const sourceMap = JSON.stringify({
  version: 3,
  file: "app.min.js",
  sources: ["src/orders.js"],
  sourcesContent: [null],
  names: ["parseOrder", "checkLine"],
  mappings: "AAKEA,aAEAC"
})

/** Minified frames of the mapped file (outermost first). */
const minifiedFrames = [
  { filename: scriptUrl, function: "a", lineno: 1, colno: 1, in_app: true },
  { filename: scriptUrl, function: "b", lineno: 1, colno: 14, in_app: true }
]

const span = (name: string, extra: Record<string, unknown> = {}) => ({
  level: "span",
  message: name,
  release: "web@1",
  span: { traceId: "a".repeat(32), spanId: "b".repeat(16), name, durationMs: 12.5, status: "ok", ...extra }
})

/** Every kind of entry: valid errors, spans, invalid ones at known indexes, mapped and unmapped releases. */
const mixedBatch = () => {
  const events: Array<unknown> = []
  for (let i = 0; i < 40; i++) {
    events.push(errorEvent({
      message: `Order ${i} failed`,
      frames: [["main", "src/index.js"], [`handler${i % 4}`, `src/handlers/${i % 4}.js`]],
      release: `web@plain-${i % 3}`,
      user: `user-${i % 7}`,
      line: i
    }))
  }
  events.splice(3, 0, { level: "error" }) // 3: no message
  events.splice(11, 0, "not an event") // 11
  events.splice(17, 0, { message: 5 }) // 17
  events.push(span("GET /orders"), span("SELECT orders", { parentId: "c".repeat(16), status: "error" }))
  events.push({ level: "span", message: "no span" }) // rejected: span required
  const mapped = { message: "negative quantity", exception: { type: "TypeError", value: "negative quantity" } }
  events.push({
    ...mapped,
    release: "web@1",
    exception: { ...mapped.exception, stacktrace: { frames: minifiedFrames } }
  })
  events.push({
    ...mapped,
    release: "web@9",
    exception: { ...mapped.exception, stacktrace: { frames: minifiedFrames } }
  })
  events.push(errorEvent({ message: "custom", fingerprint: ["checkout", "{{ default }}"], release: "web@1" }))
  events.push({ ...mapped, release: "web@1", level: "warning" }) // a mapped release without frames
  return events
}

const bytesOf = (body: unknown) => new TextEncoder().encode(typeof body === "string" ? body : JSON.stringify(body))

/** A pool with no worker: every body is prepared in the server (today's path). */
const noWorkers: WorkerPool<PrepareBody, BodyPreparation> = {
  run: () => Promise.resolve(undefined),
  ready: () => 0,
  stats: { answered: 0, abandoned: 0 },
  close: () => Promise.resolve()
}

const withoutIds = <A extends { readonly events: ReadonlyArray<{ readonly id: string }> }>(prepared: A) => ({
  ...prepared,
  events: prepared.events.map(({ id: _id, ...row }) => row)
})

const workerPool = (entry: string) =>
  Effect.acquireRelease(
    Effect.sync(() => makeWorkerPool<PrepareBody, BodyPreparation>(new URL(entry, import.meta.url), { size: 1 })),
    (pool) => Effect.promise(() => pool.close())
  )

layer(TestAppLive, { excludeTestServices: true, timeout: 120_000 })("preparation on worker threads", (it) => {
  it.effect("a batch prepared in a worker equals the same batch prepared in the server", () =>
    Effect.gen(function*() {
      const { baseUrl, sourceMaps } = yield* TestApp
      const { org, key } = yield* bootstrapOrg(baseUrl, { slug: "workers", plan: "enterprise" })
      const upload = new FormData()
      upload.set("release", "web@1")
      upload.set("name", scriptUrl)
      upload.set("file", new Blob([sourceMap]), "app.min.js.map")
      const uploaded = yield* Effect.promise(() =>
        fetch(`${baseUrl}/api/v1/observe/sourcemaps`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}` },
          body: upload
        })
      )
      expect(uploaded.status).toBe(201)

      const pool = yield* workerPool("../../services/observe/PreparationWorker.ts")
      const inWorkers = makePreparation(sourceMaps, pool)
      const inServer = makePreparation(sourceMaps, noWorkers)
      const body = bytesOf({ events: mixedBatch() })
      expect(body.length).toBeGreaterThan(16 * 1024)

      const fromWorker = yield* inWorkers.prepareBody(org.id, body, 1_800_000_000_000)
      expect(pool.stats).toEqual({ answered: 1, abandoned: 0 })
      const fromServer = yield* inServer.prepareBody(org.id, body, 1_800_000_000_000)
      expect(withoutIds(fromWorker)).toEqual(withoutIds(fromServer))

      expect(fromServer.single).toBe(false)
      expect(fromServer.rejected.map((rejection) => rejection.index)).toEqual([3, 11, 17, 45])
      expect(fromServer.rejected[0].error).toMatch(/message/)
      expect(fromServer.rejected[3].error).toBe("span: required when level is span")
      expect(fromServer.events.filter((row) => row.span !== null)).toHaveLength(2)
      // The mapped release's frames were symbolicated, the unmapped one's kept as sent.
      const stackOf = (release: string) => fromWorker.events.find((row) => row.release === release && row.stack)!.stack
      expect(stackOf("web@1")).toContain("src/orders.js")
      expect(stackOf("web@9")).not.toContain("src/orders.js")
      expect(stackOf("web@9")).toContain(scriptUrl)
      // The server's own path for already-split entries (Sentry's) agrees too.
      const split = yield* inServer.prepareEvents(org.id, mixedBatch(), 1_800_000_000_000)
      expect(withoutIds(split)).toEqual(withoutIds({ events: fromServer.events, rejected: fromServer.rejected }))
    }))

  it.effect("bodies refused as a whole get the same 400 message from a worker and from the server", () =>
    Effect.gen(function*() {
      const { sourceMaps } = yield* TestApp
      const pool = yield* workerPool("../../services/observe/PreparationWorker.ts")
      const inWorkers = makePreparation(sourceMaps, pool)
      const inServer = makePreparation(sourceMaps, noWorkers)
      const padding = " ".repeat(20 * 1024)
      const large = errorEvent({
        message: "deep stack",
        frames: Array.from({ length: 300 }, (_, i) => [`fn${i}`, `src/file${i}.js`] as const)
      })
      const bodies = [
        `{"events": [${padding}`,
        `[${padding}]`,
        `{"events": {}}${padding}`,
        `{"events": []}${padding}`,
        JSON.stringify({ events: Array.from({ length: 1001 }, () => ({ message: "many" })) }),
        JSON.stringify({ ...large, level: 7 })
      ]
      for (const body of bodies) {
        const fromWorker = yield* Effect.exit(inWorkers.prepareBody("org_x", bytesOf(body), 1))
        const fromServer = yield* Effect.exit(inServer.prepareBody("org_x", bytesOf(body), 1))
        expect(Exit.isFailure(fromServer)).toBe(true)
        expect(fromWorker).toEqual(fromServer)
      }
      expect(pool.stats).toEqual({ answered: bodies.length, abandoned: 0 })
      // A large single event is prepared in a worker and answered as one event.
      expect(bytesOf(large).length).toBeGreaterThan(16 * 1024)
      const single = yield* inWorkers.prepareBody("org_x", bytesOf(large), 1)
      expect(single).toMatchObject({ single: true, rejected: [], events: [{ message: "deep stack" }] })
      expect(pool.stats.answered).toBe(bodies.length + 1)
    }))

  it.effect("a worker that dies hands its body back: prepared in the server, nothing lost", () =>
    Effect.gen(function*() {
      const { sourceMaps } = yield* TestApp
      const dying = yield* workerPool("./DyingPreparationWorker.ts")
      const inDyingWorkers = makePreparation(sourceMaps, dying)
      const inServer = makePreparation(sourceMaps, noWorkers)
      const body = bytesOf({ events: mixedBatch() })
      const prepared = yield* inDyingWorkers.prepareBody("org_x", body, 5)
      expect(dying.stats).toEqual({ answered: 0, abandoned: 1 })
      expect(withoutIds(prepared)).toEqual(withoutIds(yield* inServer.prepareBody("org_x", body, 5)))
      expect(prepared.events).toHaveLength(mixedBatch().length - 4)
      // The dead worker left the pool: the next body goes straight to the server.
      const again = yield* inDyingWorkers.prepareBody("org_x", body, 5)
      expect(again.events).toHaveLength(prepared.events.length)
      expect(dying.stats.abandoned).toBe(1)
    }))

  it.effect("the ingest route prepares large batches on the runner's workers", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const { key } = yield* bootstrapOrg(baseUrl, { slug: "route-workers", plan: "enterprise" })
      preparationWorkers.ready() // starts the pool
      yield* eventually("a preparation worker", Effect.sync(() => preparationWorkers.ready()), (ready) => ready > 0, {
        timeoutMs: 60_000
      })
      const answered = preparationWorkers.stats.answered
      const sent = yield* ingest(baseUrl, { events: mixedBatch() }, { token: key })
      expect(sent.status).toBe(202)
      expect(sent.body).toMatchObject({ success: true, accepted: mixedBatch().length - 4 })
      expect(sent.body.rejected.map((entry: { index: number }) => entry.index)).toEqual([3, 11, 17, 45])
      expect(preparationWorkers.stats.answered).toBe(answered + 1)
      const notJson = yield* ingest(baseUrl, `{"events": [${" ".repeat(20_000)}`, { token: key })
      expect(notJson.status).toBe(400)
      expect(notJson.body).toMatchObject({ error: "validation_error", message: "The body is not valid JSON" })
    }))
})
