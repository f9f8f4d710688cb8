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
      const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-runner-"))
      // The runner's CI work folder, beside its data (a killed runner cannot remove its own).
      Fs.mkdirSync(ciWorkDir(dataDir), { mode: 0o711 })
      // A port picked here is free only until someone binds it: in embedded mode the runner's
      // own Postgres (which also picks a free port) can take it first. Then the runner exits
      // with EADDRINUSE and is started again on other ports.
      for (let attempt = 1;; attempt++) {
        const started = await spawnRunner(databaseUrl, dataDir, env)
        if (started.ready) return started.runner
        const retry = attempt < 3 && /EADDRINUSE|Address already in use/.test(started.runner.output())
        if (!retry) throw new Error(`runner did not become ready:\n${started.runner.output()}`)
      }
    }),
    (runner) =>
      Effect.callback<void>((resume) => {
        // Remove the runner's data folder (it holds a master key) once the process is gone.
        const cleanUp = () => {
          Fs.rmSync(runner.dataDir, { recursive: true, force: true })
          Fs.rmSync(ciWorkDir(runner.dataDir), { recursive: true, force: true })
          resume(Effect.void)
        }
        if (runner.child.exitCode !== null || runner.child.signalCode !== null) return cleanUp()
        runner.child.once("exit", cleanUp)
        runner.child.kill("SIGKILL")
      })
  )

const ciWorkDir = (dataDir: string) => `${dataDir}-ci`

const spawnRunner = async (databaseUrl: string, dataDir: string, env: Record<string, string> | undefined) => {
  const [port, runnerPort] = [await freePort(), await freePort()]
  // The project's Node runs the TypeScript itself (it strips the types), so a kill reaches the runner.
  const child = spawn("node_modules/.bin/node", ["src/main.ts"], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: "127.0.0.1",
      RUNNER_ADDRESS: `127.0.0.1:${runnerPort}`,
      ADMIN_TOKEN: adminToken,
      DATA_DIR: dataDir,
      CI_WORK_DIR: ciWorkDir(dataDir),
      OUTBOUND_ALLOW_PRIVATE: "true",
      ...env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (chunk) => output += chunk)
  child.stderr!.on("data", (chunk) => output += chunk)
  const baseUrl = `http://127.0.0.1:${port}`
  const runner: RunnerProcess = {
    baseUrl,
    runnerAddress: `127.0.0.1:${runnerPort}`,
    child,
    dataDir,
    output: () => output
  }
  const exited = () => child.exitCode !== null || child.signalCode !== null
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline && !exited()) {
    // Bounded: whatever else answers on that port (say a Postgres that took it) must not hang the wait.
    const ready = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.ok,
      () => false
    )
    if (ready) return { ready: true, runner } as const
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  if (!exited()) {
    child.kill("SIGKILL")
    await new Promise((resolve) => child.once("exit", resolve))
  }
  return { ready: false, runner } as const
}
