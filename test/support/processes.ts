import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { freePort } from "../../services/platform/EmbeddedPostgres.ts"
import { adminToken } from "./app.ts"

export interface RunnerProcess {
  readonly baseUrl: string
  readonly runnerAddress: string
  readonly child: ChildProcess
  readonly dataDir: string
  readonly output: () => string
}

/**
 * `npm start` as a separate process in cluster mode (RUNNER_ADDRESS set) against a shared
 * Postgres; killed with the scope. Resolves once `/readyz` answers 200.
 */
export const startRunner = (databaseUrl: string, env?: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.promise(async (): Promise<RunnerProcess> => {
      const [port, runnerPort] = [await freePort(), await freePort()]
      const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-runner-"))
      // Run node itself (not the tsx wrapper) so a kill reaches the runner, not a parent.
      const child = spawn("node_modules/.bin/node", ["--import", "tsx", "src/main.ts"], {
        env: {
          ...process.env,
          DATABASE_URL: databaseUrl,
          PORT: String(port),
          HOST: "127.0.0.1",
          RUNNER_ADDRESS: `127.0.0.1:${runnerPort}`,
          ADMIN_TOKEN: adminToken,
          DATA_DIR: dataDir,
          OUTBOUND_ALLOW_PRIVATE: "true",
          ...env
        },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      child.stdout!.on("data", (chunk) => output += chunk)
      child.stderr!.on("data", (chunk) => output += chunk)
      const baseUrl = `http://127.0.0.1:${port}`
      const deadline = Date.now() + 60_000
      while (Date.now() < deadline) {
        if (child.exitCode !== null) throw new Error(`runner exited early:\n${output}`)
        const ready = await fetch(`${baseUrl}/readyz`).then((r) => r.ok, () => false)
        if (ready) return { baseUrl, runnerAddress: `127.0.0.1:${runnerPort}`, child, dataDir, output: () => output }
        await new Promise((resolve) => setTimeout(resolve, 250))
      }
      child.kill("SIGKILL")
      throw new Error(`runner did not become ready:\n${output}`)
    }),
    (runner) =>
      Effect.callback<void>((resume) => {
        // Remove the runner's data folder (it holds a master key) once the process is gone.
        const cleanUp = () => {
          Fs.rmSync(runner.dataDir, { recursive: true, force: true })
          resume(Effect.void)
        }
        if (runner.child.exitCode !== null || runner.child.signalCode !== null) return cleanUp()
        runner.child.once("exit", cleanUp)
        runner.child.kill("SIGKILL")
      })
  )
