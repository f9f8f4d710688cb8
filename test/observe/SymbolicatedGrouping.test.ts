import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as esbuild from "esbuild"
import * as Vm from "node:vm"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
import { ingest } from "./support.ts"

/**
 * Symbolication before fingerprinting: the same bug in two minified builds (other short
 * names, other positions) is one issue once each build's source map is uploaded.
 */
class TestApp extends Context.Service<TestApp, { readonly baseUrl: string }>()("test/observe/GroupingApp") {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl })))

const source = `export function parseOrder(input) { return total(JSON.parse(input)) }
function total(order) { let sum = 0; for (const line of order.lines) sum += check(line); return sum }
function check(line) { if (line.qty < 0) throw new TypeError("negative quantity " + line.qty); return line.qty * line.price }
`
const scriptUrl = "https://cdn.example.com/static/app.min.js"

/** A minified build; `padding` bundles other code first so every position and short name moves. */
const build = async (padding: string) => {
  const result = await esbuild.build({
    stdin: {
      contents: `${padding}\n${source}`,
      sourcefile: "src/orders.js",
      loader: "js"
    },
    bundle: true,
    minify: true,
    format: "iife",
    globalName: "App",
    sourcemap: "external",
    outfile: "dist/app.min.js",
    write: false,
    logLevel: "silent"
  })
  return {
    js: result.outputFiles.find((file) => file.path.endsWith(".js"))!.text,
    map: result.outputFiles.find((file) => file.path.endsWith(".map"))!.text
  }
}

/** Runs the bundle and turns the thrown stack into Sentry-ordered frames (outermost first). */
const crash = (js: string) => {
  const context: { App?: { parseOrder(input: string): number } } = {}
  Vm.runInNewContext(`${js};this.App=App`, context, { filename: scriptUrl })
  let stack = ""
  try {
    context.App!.parseOrder(JSON.stringify({ lines: [{ qty: -1, price: 3 }] }))
  } catch (error) {
    stack = (error as Error).stack ?? ""
  }
  return stack.split("\n").slice(1).flatMap((line) => {
    const match = /^\s*at (?:(.+?) \()?(.+?):(\d+):(\d+)\)?$/.exec(line)
    return match === null || match[2] !== scriptUrl
      ? []
      : [{ function: match[1], filename: match[2], lineno: Number(match[3]), colno: Number(match[4]), in_app: true }]
  }).reverse()
}

layer(TestAppLive, { excludeTestServices: true, timeout: 120_000 })("symbolicated grouping", (it) => {
  it.effect("minified frames that symbolicate to the same source group together", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const { key } = yield* bootstrapOrg(baseUrl, { slug: "minified", plan: "enterprise" })
      const first = yield* Effect.promise(() => build(""))
      const second = yield* Effect.promise(() =>
        build(`export const helpers = [1, 2, 3].map(function helperFunction(value) { return value * 2 })`)
      )
      const [firstFrames, secondFrames] = [crash(first.js), crash(second.js)]
      // Minified, the two stacks differ (so without maps they would be two issues).
      expect(JSON.stringify(firstFrames)).not.toBe(JSON.stringify(secondFrames))

      for (const [release, map] of [["web@1", first.map], ["web@2", second.map]] as const) {
        const body = new FormData()
        body.set("release", release)
        body.set("name", scriptUrl)
        body.set("file", new Blob([map]), "app.min.js.map")
        const uploaded = yield* Effect.promise(() =>
          fetch(`${baseUrl}/api/v1/observe/sourcemaps`, {
            method: "POST",
            headers: { authorization: `Bearer ${key}` },
            body
          })
        )
        expect(uploaded.status).toBe(201)
      }
      const event = (release: string, frames: ReturnType<typeof crash>) => ({
        message: "negative quantity -1",
        release,
        exception: { type: "TypeError", value: "negative quantity -1", stacktrace: { frames } }
      })
      // In the same batch, a release without maps keeps its minified frames (its own issue).
      const sent = yield* ingest(baseUrl, {
        events: [event("web@1", firstFrames), event("web@9", firstFrames), event("web@2", secondFrames)]
      }, { token: key })
      expect(sent.status).toBe(202)

      const issues = yield* request(`${baseUrl}/api/v1/observe/issues`, { token: key })
      expect(issues.body.count).toBe(2)
      const grouped = issues.body.issues.find((issue: { releases: Array<string> }) => issue.releases.includes("web@1"))
      expect(grouped).toMatchObject({ count: 2, releases: expect.arrayContaining(["web@1", "web@2"]) })
      expect(grouped.culprit).toMatch(/^check \(/)
      const unmapped = issues.body.issues.find((issue: { releases: Array<string> }) => issue.releases.includes("web@9"))
      expect(unmapped).toMatchObject({ count: 1, releases: ["web@9"] })
      expect(unmapped.culprit).not.toMatch(/^check \(/)
      // The stored frames are the original ones; each keeps what was received as `raw`.
      const events = yield* request(`${baseUrl}/api/v1/observe/issues/${grouped.id}/events`, {
        token: key
      })
      const top = events.body.events[0].data.exception.stacktrace.frames.at(-1)
      expect(top).toMatchObject({ function: "check", raw: { filename: scriptUrl } })
    }))
})
