import { Config, Effect } from "effect"
import * as Fs from "node:fs"
import { sandboxAvailable } from "./Sandbox.ts"

/** Whether this machine has the tools a job needs (bubblewrap, prlimit, setpriv; tar for the checkout). */
export const executorToolsPresent = (): boolean => sandboxAvailable() && Fs.existsSync("/usr/bin/tar")

/**
 * This runner's CI role (GUIDE §14): `CI_WORKER` (default true, so the embedded single runner
 * runs CI) asks for CI work; the runner takes it (holds `ci` shards) only when the sandbox's
 * tools are present too, so a runner that cannot execute jobs never holds an organization's
 * queue. Read by `layers/Cluster.ts` (shard groups) and the per-runner executions.
 */
export const ciWorkerRole = Effect.gen(function*() {
  const requested = yield* Config.Boolean("CI_WORKER").pipe(Config.withDefault(true))
  return { requested, executes: requested && executorToolsPresent() }
})
