import { describe, expect, layer } from "@effect/vitest"
import { it as plain } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as esbuild from "esbuild"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Vm from "node:vm"
import { type Frame, SourceMaps } from "../../services/observe/SourceMaps.ts"
import { enclosingFunctionAt, nameCandidates } from "../../services/observe/Symbolication.ts"
import { bootstrapOrg, request, startApp } from "../support/app.ts"

/** One app (fresh database, local blob folder) for the whole file. */
class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly sourceMaps: SourceMaps["Service"]
}>()("test/observe/SourceMapsApp") {}

const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(startApp(), (app) => ({
    baseUrl: app.baseUrl,
    sourceMaps: Context.get(app.context as Context.Context<SourceMaps>, SourceMaps)
  }))
)

// --- two minified builds of the same source, made by esbuild ----------------------------

const ordersSource = `export function parseOrder(input) {
  const order = JSON.parse(input)
  return computeTotal(order)
}

function computeTotal(order) {
  let total = 0
  for (const line of order.lines) total += checkLine(line)
  return total
}

function checkLine(line) {
  if (line.qty < 0) throw new Error("negative quantity " + line.qty)
  return line.qty * line.price
}
`
const extraSource = `export function describeOrder(order) {
  const parts = order.lines.map((line) => line.qty + " x " + line.price)
  return "order: " + parts.join(", ")
}
`
/** Build 2 bundles more code before the orders module, so every position and short name moves. */
const secondEntry = `import { describeOrder } from "./extra.js"
export { parseOrder } from "./orders.js"
export const describe = describeOrder
`

const scriptUrl = "https://cdn.example.com/static/app.min.js"

interface Build {
  readonly js: string
  readonly map: string
}

const build = (entry: "orders.js" | "main2.js"): Promise<Build> => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-sourcemap-"))
  Fs.mkdirSync(Path.join(dir, "src"))
  Fs.writeFileSync(Path.join(dir, "src", "orders.js"), ordersSource)
  Fs.writeFileSync(Path.join(dir, "src", "extra.js"), extraSource)
  Fs.writeFileSync(Path.join(dir, "src", "main2.js"), secondEntry)
  return esbuild.build({
    entryPoints: [Path.join(dir, "src", entry)],
    outfile: Path.join(dir, "dist", "app.min.js"),
    bundle: true,
    minify: true,
    format: "iife",
    globalName: "App",
    sourcemap: "external",
    write: false,
    logLevel: "silent"
  }).then((result) => ({
    js: result.outputFiles.find((file) => file.path.endsWith(".js"))!.text,
    map: result.outputFiles.find((file) => file.path.endsWith(".map"))!.text
  })).finally(() => Fs.rmSync(dir, { recursive: true, force: true }))
}

/** Runs the bundle as the browser would load it and turns the thrown stack into Sentry frames. */
const crashFrames = (bundle: Build): ReadonlyArray<Frame> => {
  const context: { App?: { parseOrder(input: string): number } } = {}
  Vm.runInNewContext(`${bundle.js};this.App=App`, context, { filename: scriptUrl })
  let stack = ""
  try {
    context.App!.parseOrder(JSON.stringify({ lines: [{ qty: 1, price: 2 }, { qty: -1, price: 3 }] }))
  } catch (error) {
    stack = (error as Error).stack ?? ""
  }
  const frames = stack.split("\n").slice(1).flatMap((line): Array<Frame> => {
    const match = /^\s*at (?:(.+?) \()?(.+?):(\d+):(\d+)\)?$/.exec(line)
    if (match === null) return []
    return [{
      function: match[1],
      filename: match[2],
      lineno: Number(match[3]),
      colno: Number(match[4]),
      in_app: match[2] === scriptUrl
    }]
  })
  // Sentry order: outermost caller first, the throwing frame last.
  return frames.reverse()
}

const upload = (
  token: string,
  form: { release?: string; name?: string; file?: string | Blob },
  init?: { headers?: Record<string, string> }
) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestApp
    const body = new FormData()
    if (form.release !== undefined) body.set("release", form.release)
    if (form.name !== undefined) body.set("name", form.name)
    if (form.file !== undefined) {
      body.set("file", typeof form.file === "string" ? new Blob([form.file]) : form.file, "app.min.js.map")
    }
    return yield* Effect.promise(async () => {
      const response = await fetch(`${baseUrl}/api/v1/observe/sourcemaps`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, ...init?.headers },
        body
      })
      const text = await response.text()
      return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
    })
  })

const api = (path: string, init?: { method?: string; token?: string }) =>
  Effect.flatMap(TestApp, ({ baseUrl }) => request(`${baseUrl}/api/v1/observe/sourcemaps${path}`, init))

let orgCounter = 0
const newOrg = (scopes?: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestApp
    const slug = `sm-${process.pid}-${++orgCounter}`
    return yield* bootstrapOrg(baseUrl, { slug, plan: "enterprise", ...(scopes ? { scopes } : {}) })
  })

/** What grouping looks at: where each frame is, not how it was minified. */
const locations = (frames: ReadonlyArray<Frame>) =>
  frames.map(({ colno, filename, function: fn, lineno }) => ({ filename, function: fn, lineno, colno }))

layer(TestAppLive, { excludeTestServices: true, timeout: "120 seconds" })("Source maps", (it) => {
  it.effect("symbolicates minified frames to the original file, function and line; two builds agree", () =>
    Effect.gen(function*() {
      const { sourceMaps } = yield* TestApp
      const { key, org } = yield* newOrg()
      const [first, second] = yield* Effect.promise(() => Promise.all([build("orders.js"), build("main2.js")]))
      const firstFrames = crashFrames(first)
      const secondFrames = crashFrames(second)
      // The two builds really differ where it matters.
      expect(locations(firstFrames)).not.toEqual(locations(secondFrames))

      // Release 1.0.0 under Sentry's `~/path`, 1.0.1 under the bare map file name.
      const one = yield* upload(key, { release: "1.0.0", name: "~/static/app.min.js", file: first.map })
      expect(one.status, JSON.stringify(one.body)).toBe(201)
      expect(one.body).toMatchObject({ filename: "~/static/app.min.js", release: "1.0.0", size: first.map.length })
      expect(one.body.id).toMatch(/^sm_/)
      const two = yield* upload(key, { release: "1.0.1", name: "app.min.js.map", file: second.map })
      expect(two.status, JSON.stringify(two.body)).toBe(201)
      expect(two.body.filename).toBe("app.min.js")

      const mapped = yield* sourceMaps.symbolicate(org.id, "1.0.0", firstFrames)
      const inApp = mapped.filter((frame) => frame.raw !== undefined)
      expect(inApp.map(({ filename, function: fn, lineno }) => ({ filename, function: fn, lineno }))).toEqual([
        { filename: "src/orders.js", function: "parseOrder", lineno: 3 },
        { filename: "src/orders.js", function: "computeTotal", lineno: 8 },
        { filename: "src/orders.js", function: "checkLine", lineno: 13 }
      ])
      // The frame as received is kept; frames outside the bundle pass unchanged.
      expect(inApp.at(-1)!.raw).toEqual(firstFrames.at(-1))
      expect(mapped.filter((frame) => frame.raw === undefined)).toEqual(
        firstFrames.filter((frame) => frame.filename !== scriptUrl)
      )

      const mappedSecond = yield* sourceMaps.symbolicate(org.id, "1.0.1", secondFrames)
      expect(locations(mappedSecond.filter((frame) => frame.raw !== undefined))).toEqual(locations(inApp))

      // An indexed map (`sections`) wrapping the same map reads the same.
      const indexed = { version: 3, sections: [{ offset: { line: 0, column: 0 }, map: JSON.parse(first.map) }] }
      const three = yield* upload(key, { release: "1.0.2", name: "/static/app.min.js", file: JSON.stringify(indexed) })
      expect(three.status, JSON.stringify(three.body)).toBe(201)
      expect(locations(yield* sourceMaps.symbolicate(org.id, "1.0.2", firstFrames))).toEqual(locations(mapped))

      // Another release, no release, or another organization: nothing maps.
      expect(yield* sourceMaps.symbolicate(org.id, "9.9.9", firstFrames)).toEqual(firstFrames)
      expect(yield* sourceMaps.symbolicate(org.id, undefined, firstFrames)).toEqual(firstFrames)
      const other = yield* newOrg()
      expect(yield* sourceMaps.symbolicate(other.org.id, "1.0.0", firstFrames)).toEqual(firstFrames)
      // Ingest skips symbolication for a request's releases without maps.
      expect(yield* sourceMaps.hasMaps(org.id, "1.0.0")).toBe(true)
      expect(yield* sourceMaps.hasMaps(org.id, "9.9.9")).toBe(false)
      expect(yield* sourceMaps.hasMaps(other.org.id, "1.0.0")).toBe(false)
    }))

  it.effect("lists, replaces and deletes maps; another organization's map is a 404", () =>
    Effect.gen(function*() {
      const { sourceMaps } = yield* TestApp
      const { key, org } = yield* newOrg()
      const bundle = yield* Effect.promise(() => build("orders.js"))
      const frames = crashFrames(bundle)
      const first = yield* upload(key, { release: "2.0.0", name: scriptUrl, file: bundle.map })
      expect(first.status).toBe(201)
      yield* upload(key, { release: "2.1.0", name: scriptUrl, file: bundle.map })
      // Same release and name again: the new map replaces the old one.
      const replaced = yield* upload(key, { release: "2.0.0", name: `${scriptUrl}?v=2`, file: bundle.map })
      expect(replaced.status).toBe(201)
      expect(replaced.body.id).not.toBe(first.body.id)

      const all = yield* api("", { token: key })
      expect(all.status).toBe(200)
      expect(all.body.count).toBe(2)
      expect(all.body.sourceMaps.map((map: { id: string }) => map.id)).toContain(replaced.body.id)
      const page = yield* api("?release=2.0.0&limit=1", { token: key })
      expect(page.body).toMatchObject({ count: 1, sourceMaps: [{ id: replaced.body.id, filename: scriptUrl }] })
      expect((yield* api(`/${first.body.id}`, { token: key })).status).toBe(404)
      expect((yield* api(`/${replaced.body.id}`, { token: key })).body.release).toBe("2.0.0")

      // Matched by full URL (the query is ignored).
      const mapped = yield* sourceMaps.symbolicate(org.id, "2.0.0", frames)
      expect(mapped.at(-1)!.filename).toBe("src/orders.js")

      const other = yield* newOrg()
      expect((yield* api(`/${replaced.body.id}`, { token: other.key })).status).toBe(404)
      const foreignDelete = yield* api(`/${replaced.body.id}`, { method: "DELETE", token: other.key })
      expect(foreignDelete.status).toBe(404)
      expect(foreignDelete.body.error).toBe("not_found")
      expect((yield* api("", { token: other.key })).body).toEqual({ sourceMaps: [], count: 0 })

      const removed = yield* api(`/${replaced.body.id}`, { method: "DELETE", token: key })
      expect(removed.status).toBe(204)
      expect((yield* api("?release=2.0.0", { token: key })).body.count).toBe(0)
      // This runner forgets the map at once.
      expect(yield* sourceMaps.symbolicate(org.id, "2.0.0", frames)).toEqual(frames)
      expect((yield* api(`/${replaced.body.id}`, { method: "DELETE", token: key })).status).toBe(404)
    }))

  it.effect("accepts the file part whatever its content type (curl and browsers send application/json for .map)", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg()
      const map = JSON.stringify({ version: 3, sources: ["a.ts"], names: [], mappings: "AAAA" })
      for (const type of ["application/json", "text/plain", "application/octet-stream", ""]) {
        const uploaded = yield* upload(key, { release: "1", name: `a-${type}.js`, file: new Blob([map], { type }) })
        expect(uploaded.status, `${type}: ${JSON.stringify(uploaded.body)}`).toBe(201)
        expect(uploaded.body.size).toBe(map.length)
      }
    }))

  it.effect("refuses what is not a source map, an incomplete form, a missing scope and an oversized file", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg()
      const expectInvalid = (response: { status: number; body: any }, path: string) => {
        expect(response.status, JSON.stringify(response.body)).toBe(400)
        expect(response.body.error).toBe("validation_error")
        expect(response.body.details.map((detail: { path: string }) => detail.path)).toContain(path)
      }
      expectInvalid(yield* upload(key, { release: "1", name: "a.js", file: "function a() {}" }), "body.file")
      expectInvalid(yield* upload(key, { release: "1", name: "a.js", file: JSON.stringify({ hello: 1 }) }), "body.file")
      expectInvalid(
        yield* upload(key, { release: "1", name: "a.js", file: JSON.stringify({ version: 3, sources: [] }) }),
        "body.file"
      )
      const valid = JSON.stringify({ version: 3, sources: ["a.ts"], names: [], mappings: "AAAA" })
      expectInvalid(yield* upload(key, { name: "a.js", file: valid }), "body.release")
      expectInvalid(yield* upload(key, { release: "1", file: valid }), "body.name")
      expectInvalid(yield* upload(key, { release: "1", name: "a.js" }), "body.file")
      expectInvalid(yield* upload(key, { release: " ", name: "a.js", file: valid }), "body.release")
      expect((yield* api("", { token: key })).body.count).toBe(0)

      const reader = yield* newOrg(["observe:read"])
      const forbidden = yield* upload(reader.key, { release: "1", name: "a.js", file: valid })
      expect(forbidden.status).toBe(403)
      expect(forbidden.body.error).toBe("forbidden")
      expect((yield* api("", { token: reader.key })).status).toBe(200)
      const writer = yield* newOrg(["observe:ingest"])
      expect((yield* api("", { token: writer.key })).status).toBe(403)

      // 50 MiB is the limit, whether the size is announced or only discovered while reading.
      const huge = new Uint8Array(50 * 1024 * 1024 + 1).fill(32)
      const announced = yield* upload(key, { release: "1", name: "a.js", file: new Blob([huge]) })
      expect(announced.status).toBe(413)
      expect(announced.body.error).toBe("payload_too_large")
      const { baseUrl } = yield* TestApp
      const streamed = yield* Effect.promise(async () => {
        const form = new FormData()
        form.set("release", "1")
        form.set("name", "a.js")
        form.set("file", new Blob([huge]), "a.js.map")
        const encoded = new Response(form)
        const response = await fetch(`${baseUrl}/api/v1/observe/sourcemaps`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${key}`,
            "content-type": encoded.headers.get("content-type")!
          },
          body: encoded.body,
          duplex: "half"
        } as RequestInit)
        return { status: response.status, body: (await response.json()) as { error: string } }
      })
      expect(streamed.status).toBe(413)
      expect(streamed.body.error).toBe("payload_too_large")
      expect((yield* api("", { token: key })).body.count).toBe(0)
    }))
})

describe("Symbolication helpers", () => {
  plain("derives the names a frame's file can be uploaded under, best first", () => {
    expect(nameCandidates("https://cdn.example.com/static/app.min.js?v=3#x")).toEqual([
      "https://cdn.example.com/static/app.min.js",
      "/static/app.min.js",
      "~/static/app.min.js",
      "static/app.min.js",
      "app.min.js"
    ])
    expect(nameCandidates("app:///dist/main.js")).toEqual([
      "app:///dist/main.js",
      "/dist/main.js",
      "~/dist/main.js",
      "dist/main.js",
      "main.js"
    ])
    expect(nameCandidates("main.js")).toEqual(["main.js"])
  })

  plain("finds the function enclosing a position in the original source", () => {
    const source = [
      "class Cart {",
      "  total(items: Array<Item>): number {",
      "    if (items.length === 0) { return 0 }",
      "    return items.reduce((sum, item) => {",
      "      return sum + item.price",
      "    }, 0)",
      "  }",
      "}",
      "const checkout = async (cart) => {",
      "  for (const x of cart) { pay(x) }",
      "}"
    ].join("\n")
    const at = (line: number, column: number) =>
      enclosingFunctionAt(source, source.split("\n").slice(0, line - 1).join("\n").length + (line > 1 ? 1 : 0) + column)
    expect(at(3, 30)).toBe("total")
    // Inside an anonymous arrow: not named after the method around it.
    expect(at(5, 6)).toBeUndefined()
    expect(at(10, 26)).toBe("checkout")
    expect(at(1, 0)).toBeUndefined()
  })
})
