import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { request } from "../support/app.ts"
import { startRunner } from "../support/processes.ts"

const waitForExit = (child: import("node:child_process").ChildProcess) =>
  Effect.callback<number | null>((resume) => {
    if (child.exitCode !== null) return resume(Effect.succeed(child.exitCode))
    child.once("exit", (code) => resume(Effect.succeed(code)))
  })

/** `npm start` with no DATABASE_URL: embedded Postgres in DATA_DIR, clean stop, data kept. */
describe("embedded mode", () => {
  it.live(
    "starts Postgres itself, stops it cleanly on SIGTERM and keeps the data for the next start",
    () =>
      Effect.gen(function*() {
        const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-embedded-"))
        Fs.chmodSync(dataDir, 0o755)
        const env = { DATABASE_URL: "", RUNNER_ADDRESS: "", DATA_DIR: dataDir, ADMIN_TOKEN: "" }

        const first = yield* startRunner("", env)
        const token = Fs.readFileSync(Path.join(dataDir, "admin-token"), "utf8").trim()
        expect(first.output()).toContain(token)
        const created = yield* request(`${first.baseUrl}/api/v1/admin/orgs`, {
          method: "POST",
          token,
          body: { slug: "kept", name: "Kept" }
        })
        expect(created.status).toBe(201)
        expect(Fs.existsSync(Path.join(dataDir, "pg", "postmaster.pid"))).toBe(true)

        first.child.kill("SIGTERM")
        // Interrupted by a signal, the runtime exits 128 + signal number after its finalizers ran.
        expect([0, 130, 143]).toContain(yield* waitForExit(first.child))
        // A clean shutdown removes the postmaster lock file.
        expect(Fs.existsSync(Path.join(dataDir, "pg", "postmaster.pid"))).toBe(false)

        const second = yield* startRunner("", env)
        expect(second.output()).not.toContain(token)
        const orgs = yield* request(`${second.baseUrl}/api/v1/admin/orgs`, { token })
        expect(orgs.body.orgs.map((org: any) => org.slug)).toEqual(["kept"])
        second.child.kill("SIGINT")
        expect([0, 130, 143]).toContain(yield* waitForExit(second.child))
        expect(Fs.existsSync(Path.join(dataDir, "pg", "postmaster.pid"))).toBe(false)
        Fs.rmSync(dataDir, { recursive: true, force: true })
      }).pipe(Effect.scoped),
    { timeout: 120_000 }
  )
})
