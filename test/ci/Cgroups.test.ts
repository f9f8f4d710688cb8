import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { makeJobCgroups } from "../../services/ci/JobCgroups.ts"
import { gitClient } from "../git/gitClient.ts"
import { startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { ciRepo, hostProcesses, withEnv } from "./support.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string }>()("test/ci/CgroupsApp") {}
const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(
    startApp(undefined, withEnv({ CI_MEMORY_MB: "1536", CI_MAX_PROCESSES: "128", CI_CPUS: "0.5" })),
    (app) => ({ baseUrl: app.baseUrl })
  )
)

/** The cgroup v1 group of `pid` under `controller` (as /proc shows it to this process). */
const groupOf = (pid: string, controller: string) => {
  const line = Fs.readFileSync(`/proc/${pid}/cgroup`, "utf8").split("\n")
    .find((entry) => entry.split(":")[1]?.split(",").includes(controller))
  return line?.split(":")[2]
}

// Only where this machine lets a root runner make cgroup v1 groups (elsewhere prlimit alone limits jobs).
const available = await makeJobCgroups()

layer(TestAppLive, { excludeTestServices: true, timeout: "180 seconds" })("CI cgroups", (it) => {
  it.effect.skipIf(available?.version !== 1)(
    "a job's processes share one cgroup with its memory, CPU and process limits, removed after the job",
    () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestApp
        const git = yield* gitClient
        const marker = `sleep 6.${process.pid % 1000}`
        const { ci } = yield* ciRepo(git, baseUrl, `ci-cgroup-${process.pid}`, {
          config: { installCommand: "true", testCommand: `${marker} & ${marker}; wait` },
          files: { "README.md": "cgroups\n" }
        })
        const pids = yield* eventually(
          "the job's two sleeps",
          Effect.sync(() =>
            hostProcesses(marker).filter((pid) => Fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").startsWith("sleep"))
          ),
          (found) => found.length === 2,
          { timeoutMs: 60_000, pollMs: 100 }
        )
        const groups = ["memory", "cpu", "pids"].map((controller) => {
          const paths = pids.map((pid) => groupOf(pid, controller))
          // Both processes in one group of the job's, nested under this machine's own group.
          expect(new Set(paths).size, controller).toBe(1)
          expect(paths[0], controller).toMatch(/\/canopy-ci\/\d+\.\d+-\d+$/)
          return Path.join("/sys/fs/cgroup", controller, paths[0]!)
        })
        const read = (file: string) => Fs.readFileSync(file, "utf8").trim()
        expect(read(Path.join(groups[0], "memory.limit_in_bytes"))).toBe(String(1536 * 1024 ** 2))
        expect(read(Path.join(groups[1], "cpu.cfs_quota_us"))).toBe("50000")
        expect(read(Path.join(groups[1], "cpu.cfs_period_us"))).toBe("100000")
        expect(read(Path.join(groups[2], "pids.max"))).toBe("128")

        const detail = yield* ci.completed(1)
        expect(detail.run.conclusion).toBe("success")
        for (const group of groups) {
          yield* eventually(`${group} removed`, Effect.sync(() => Fs.existsSync(group)), (exists) => !exists)
        }
      }).pipe(Effect.scoped),
    120_000
  )
})
