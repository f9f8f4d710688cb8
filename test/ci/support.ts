import { ConfigProvider, Context, Effect } from "effect"
import * as Fs from "node:fs"
import { commit, createRepo, type GitClient } from "../git/gitClient.ts"
import { request } from "../support/app.ts"
import { eventually } from "../support/wait.ts"

/**
 * CI test helpers: a repository with CI enabled, fixture projects that need no network
 * (a `package.json` with a `package-lock.json` and no dependencies, `node --test` files),
 * and the CI API.
 */

export const nodeProject = (tests: Record<string, string>, scripts: Record<string, string> = {}) => ({
  "package.json": JSON.stringify({ name: "fixture", version: "1.0.0", scripts: { test: "node --test", ...scripts } }),
  "package-lock.json": JSON.stringify({
    name: "fixture",
    version: "1.0.0",
    lockfileVersion: 3,
    requires: true,
    packages: { "": { name: "fixture", version: "1.0.0" } }
  }),
  ...Object.fromEntries(Object.entries(tests).map(([name, body]) => [`test/${name}`, body]))
})

export const passingTest = `const test = require("node:test")
const assert = require("node:assert")
test("adds", () => assert.strictEqual(1 + 1, 2))
`
export const failingTest = `const test = require("node:test")
const assert = require("node:assert")
test("adds", () => assert.strictEqual(1 + 1, 2))
test("multiplies", () => assert.strictEqual(2 * 2, 5))
`

export const ciApi = (baseUrl: string, repo: { slug: string; name: string; key: string }) => {
  const url = (tail: string) => `${baseUrl}/api/v1/code/repos/${repo.slug}/${repo.name}${tail}`
  const token = repo.key
  return {
    url,
    config: () => request(url("/ci/config"), { token }),
    patchConfig: (body: Record<string, unknown>) => request(url("/ci/config"), { method: "PATCH", token, body }),
    putVariable: (name: string, body: Record<string, unknown>) =>
      request(url(`/ci/variables/${name}`), { method: "PUT", token, body }),
    variables: () => request(url("/ci/variables"), { token }),
    trigger: (body: Record<string, unknown>) => request(url("/ci/runs"), { method: "POST", token, body }),
    runs: (query = "") => request(url(`/ci/runs${query}`), { token }),
    run: (number: number) => request(url(`/ci/runs/${number}`), { token }),
    cancel: (number: number) => request(url(`/ci/runs/${number}/cancel`), { method: "POST", token }),
    rerun: (number: number) => request(url(`/ci/runs/${number}/rerun`), { method: "POST", token }),
    log: (number: number, jobId: string) =>
      Effect.promise(async () => {
        const response = await fetch(url(`/ci/runs/${number}/jobs/${jobId}/log`), {
          headers: { authorization: `Bearer ${token}` }
        })
        return { status: response.status, type: response.headers.get("content-type"), text: await response.text() }
      }),
    statuses: (sha: string) => request(url(`/commits/${sha}/statuses`), { token }),
    /** Waits for run `number` to complete and returns its detail. */
    completed: (number: number, timeoutMs = 90_000) =>
      Effect.map(
        eventually(`run #${number} completed`, request(url(`/ci/runs/${number}`), { token }), (r) =>
          r.status === 200 && r.body.run.status === "completed", { timeoutMs, pollMs: 200 }),
        (r) =>
          r.body
      )
  }
}

/** A repository (plan `plan`) with CI enabled and `main` holding `files`, pushed from `git.dir(name)`. */
export const ciRepo = (
  git: GitClient,
  baseUrl: string,
  slug: string,
  options: { plan?: string; config?: Record<string, unknown>; files?: Record<string, string>; name?: string } = {}
) =>
  Effect.gen(function*() {
    const repo = yield* createRepo(baseUrl, { slug, plan: options.plan ?? "enterprise" })
    const ci = ciApi(baseUrl, repo)
    const patched = yield* ci.patchConfig({ enabled: true, ...options.config })
    if (patched.status !== 200) throw new Error(`config: ${patched.status} ${JSON.stringify(patched.body)}`)
    const dir = git.dir(options.name ?? slug)
    yield* git.ok(["init", "-q", dir])
    yield* git.ok(["remote", "add", "origin", repo.url], { cwd: dir })
    let head: string | undefined
    if (options.files !== undefined) {
      head = yield* commit(git, dir, options.files, "initial")
      yield* git.ok(["push", "-q", "origin", "main"], { cwd: dir })
    }
    return { repo, ci, dir, head }
  })

/** Commits `files` in `dir` and pushes the branch; returns the new head. */
export const pushCommit = (git: GitClient, dir: string, files: Record<string, string | Buffer>, branch = "main") =>
  Effect.gen(function*() {
    const head = yield* commit(git, dir, files, `change ${Object.keys(files).join(", ")}`)
    yield* git.ok(["push", "-q", "origin", `HEAD:${branch}`], { cwd: dir })
    return head
  })

/** Host processes whose command line contains `text` (a job's processes must not outlive it). */
export const hostProcesses = (text: string) =>
  Fs.readdirSync("/proc").filter((name) => /^\d+$/.test(name)).filter((pid) => {
    try {
      return Fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").includes(text)
    } catch {
      return false
    }
  })

/** The app's environment (Config reads it once per process): the real one plus `env`. */
export const withEnv = (env: Record<string, string>) =>
  Context.make(
    ConfigProvider.ConfigProvider,
    ConfigProvider.fromEnv({ env: { ...process.env as Record<string, string>, ...env } })
  ) as Context.Context<never>
