import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { freePort } from "../../services/platform/EmbeddedPostgres.ts"
import { request } from "../support/app.ts"
import { startRunner } from "../support/processes.ts"
import { tempDir } from "../support/tempDir.ts"
import { eventually } from "../support/wait.ts"

/** The child's exit code; fails with its output if it has not exited within 60 s. */
const waitForExit = (child: import("node:child_process").ChildProcess, output: () => string) =>
  Effect.callback<number | null>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.succeed(child.exitCode))
    child.once("exit", (code) => resume(Effect.succeed(code)))
  }).pipe(
    Effect.timeoutOrElse({
      duration: "60 seconds",
      orElse: () => Effect.die(new Error(`process ${child.pid} did not exit:\n${output()}`))
    })
  )

/** `npm start` with no DATABASE_URL: embedded Postgres in DATA_DIR, clean stop, data kept. */
describe("embedded mode", () => {
  it.live(
    "starts Postgres itself, stops it cleanly on SIGTERM and keeps the data for the next start",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDir("canopy-embedded-")
        Fs.chmodSync(dataDir, 0o755)
        const env = { DATABASE_URL: "", RUNNER_ADDRESS: "", DATA_DIR: dataDir, ADMIN_TOKEN: "" }

        const first = yield* startRunner("", env)
        const token = Fs.readFileSync(Path.join(dataDir, "admin-token"), "utf8").trim()
        // The token line is printed once the server listens, so it can trail the readiness probe.
        yield* eventually("the admin token printed", Effect.sync(first.output), (output) => output.includes(token))
        const created = yield* request(`${first.baseUrl}/api/v1/admin/orgs`, {
          method: "POST",
          token,
          body: { slug: "kept", name: "Kept" }
        })
        expect(created.status).toBe(201)
        expect(Fs.existsSync(Path.join(dataDir, "pg", "postmaster.pid"))).toBe(true)

        // A second start on the same DATA_DIR says so in one sentence and exits, leaving the first alone.
        const port = yield* Effect.promise(freePort)
        const second = yield* Effect.acquireRelease(
          Effect.sync(() =>
            spawn("node_modules/.bin/node", ["src/main.ts"], {
              env: { ...process.env, ...env, PORT: String(port), HOST: "127.0.0.1" },
              stdio: ["ignore", "pipe", "pipe"]
            })
          ),
          (child) => Effect.sync(() => child.exitCode === null && child.signalCode === null && child.kill("SIGKILL"))
        )
        let secondOutput = ""
        second.stdout!.on("data", (chunk) => secondOutput += chunk)
        second.stderr!.on("data", (chunk) => secondOutput += chunk)
        expect(yield* waitForExit(second, () => secondOutput)).toBe(1)
        expect(secondOutput).toContain(
          `Canopy could not start: The data directory ${Path.join(dataDir, "pg")} is in use`
        )
        expect(secondOutput).not.toMatch(/^\s+at /m)
        expect((yield* request(`${first.baseUrl}/healthz`)).status).toBe(200)

        first.child.kill("SIGTERM")
        // Interrupted by a signal, the runtime exits 128 + signal number after its finalizers ran.
        expect([0, 130, 143]).toContain(yield* waitForExit(first.child, first.output))
        // A clean shutdown removes the postmaster lock file.
        expect(Fs.existsSync(Path.join(dataDir, "pg", "postmaster.pid"))).toBe(false)

        const restarted = yield* startRunner("", env)
        yield* eventually("the token file named", Effect.sync(restarted.output), (output) =>
          output.includes("Admin token: see"))
        expect(restarted.output()).not.toContain(token)
        const orgs = yield* request(`${restarted.baseUrl}/api/v1/admin/orgs`, { token })
        expect(orgs.body.orgs.map((org: any) =>
          org.slug
        )).toEqual(["kept"])
        restarted.child.kill("SIGINT")
        expect([0, 130, 143]).toContain(yield* waitForExit(restarted.child, restarted.output))
        expect(Fs.existsSync(Path.join(dataDir, "pg", "postmaster.pid"))).toBe(false)
      }).pipe(Effect.scoped),
    { timeout: 120_000 }
  )
})
