/**
 * `npm run bench:ci`: CI runs against the same commands run directly (GUIDE §14, issue 28).
 *
 * (a) overhead: `RUNS` (default 10) manual runs of a small repository with two jobs
 *     (`install`: `true`, `test`: `echo ok`), each run's wall time (start to completion:
 *     checkout from storage, sandbox start per job, log capture, summary) against the same
 *     two commands spawned directly with `sh -c` in the same run; the difference per job.
 * (b) push to job start: `PUSHES` (default 20) pushes, from `git push` returning to the first
 *     job's `startedAt`, with a free slot.
 * (c) a burst of `BURST` (default 50) runs on a Pro organization (5 concurrent): all complete,
 *     never more than 5 running at once (polled every 50 ms), and started in order.
 */
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Database } from "../services/platform/Database.ts"
import { isolatedGitEnv, run } from "./git-repo.ts"
import { percentile, printTable, startCanopyOnEmbeddedPostgres } from "./support.ts"

const env = (name: string, fallback: number) => Number(process.env[name] || fallback)
const RUNS = env("RUNS", 10)
const PUSHES = env("PUSHES", 20)
const BURST = env("BURST", 50)

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const direct = (command: string) =>
  new Promise<number>((resolve, reject) => {
    const started = performance.now()
    const child = spawn("sh", ["-c", command], { stdio: ["ignore", "pipe", "pipe"] })
    child.stdout.resume()
    child.stderr.resume()
    child.on("error", reject)
    child.on("close", () => resolve(performance.now() - started))
  })

const main = async () => {
  const canopy = await startCanopyOnEmbeddedPostgres({ CI_WORKER_SLOTS: "10" })
  const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-bench-ci-git-"))
  try {
    await canopy.admin("/orgs", { slug: "bench", name: "Bench", plan: "pro" })
    await canopy.admin("/orgs/bench/users", { username: "bench", email: "bench@example.com", role: "owner" })
    const key = (await canopy.admin("/orgs/bench/keys", { username: "bench" })).key as string
    const api = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${canopy.base}/api/v1/code${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body)
      })
      return response.json() as Promise<any>
    }
    await api("POST", "/repos", { name: "app", visibility: "private" })
    const repo = "/repos/bench/app"
    await api("PATCH", `${repo}/ci/config`, {
      enabled: true,
      triggerOnPush: false,
      installCommand: "true",
      testCommand: "echo ok"
    })
    const gitEnv = isolatedGitEnv(home, "Bench", "bench@example.com")
    const work = Path.join(home, "work")
    const url = new URL(`${canopy.base}/bench/app.git`)
    url.username = "git"
    url.password = key
    await run(["init", "-q", "-b", "main", work], gitEnv)
    for (let i = 0; i < 20; i++) Fs.writeFileSync(Path.join(work, `file${i}.txt`), `file ${i}\n`.repeat(50))
    await run(["add", "-A"], gitEnv, undefined, work)
    await run(["commit", "-q", "-m", "small repository"], gitEnv, undefined, work)
    await run(["push", "-q", url.toString(), "main"], gitEnv, undefined, work)

    // Progress is read from Postgres: polling the API would spend the plan's request quota.
    const context = await Effect.runPromise(
      Layer.buildWithScope(Database.layer(Redacted.make(canopy.pg.url), { maxConnections: 2 }), canopy.scope)
    )
    const sql = Context.get(context, SqlClient.SqlClient)
    const query = <A extends object>(statement: Effect.Effect<ReadonlyArray<A>, unknown>) =>
      Effect.runPromise(Effect.orDie(statement))
    const completed = async (number: number) => {
      for (;;) {
        const [row] = await query(sql<{ status: string }>`SELECT status FROM ci_runs WHERE number = ${number}`)
        if (row?.status === "completed") return api("GET", `${repo}/ci/runs/${number}`)
        await sleep(10)
      }
    }

    // (a) overhead per job
    const runWalls: Array<number> = []
    const directWalls: Array<number> = []
    for (let i = 0; i < RUNS; i++) {
      const triggered = await api("POST", `${repo}/ci/runs`, { branch: "main" })
      const detail = await completed(triggered.number)
      if (detail.run.conclusion !== "success") throw new Error(`run failed: ${JSON.stringify(detail)}`)
      runWalls.push(Date.parse(detail.run.completedAt) - Date.parse(detail.run.startedAt))
      directWalls.push((await direct("true")) + (await direct("echo ok")))
    }
    const mean = (values: ReadonlyArray<number>) => values.reduce((a, b) => a + b, 0) / values.length
    const jobs = 2
    const overhead = (mean(runWalls) - mean(directWalls)) / jobs

    // (b) push to job start
    await api("PATCH", `${repo}/ci/config`, { triggerOnPush: true })
    const latencies: Array<number> = []
    for (let i = 0; i < PUSHES; i++) {
      Fs.writeFileSync(Path.join(work, "push.txt"), `push ${i}\n`)
      await run(["add", "-A"], gitEnv, undefined, work)
      await run(["commit", "-q", "-m", `push ${i}`], gitEnv, undefined, work)
      await run(["push", "-q", url.toString(), "main"], gitEnv, undefined, work)
      const pushed = Date.now()
      const detail = await completed(RUNS + i + 1)
      latencies.push(Date.parse(detail.jobs[0].startedAt) - pushed)
    }
    await api("PATCH", `${repo}/ci/config`, { triggerOnPush: false, testCommand: "sleep 0.5" })
    latencies.sort((a, b) => a - b)

    // (c) a burst on a Pro organization
    const first = RUNS + PUSHES + 1
    const burstStart = performance.now()
    await Promise.all(Array.from({ length: BURST }, () => api("POST", `${repo}/ci/runs`, { branch: "main" })))
    let maxRunning = 0
    for (;;) {
      const [counts] = await query(sql<{ running: number; left: number }>`
        SELECT count(*) FILTER (WHERE status = 'running')::int AS running,
               count(*) FILTER (WHERE status = 'queued')::int AS left
        FROM ci_runs`)
      maxRunning = Math.max(maxRunning, counts.running)
      if (counts.running === 0 && counts.left === 0) break
      await sleep(50)
    }
    const burstSeconds = (performance.now() - burstStart) / 1000
    const burst = await Promise.all(Array.from({ length: BURST }, (_, i) => completed(first + i)))
    const allSucceeded = burst.every((detail) => detail.run.conclusion === "success")
    const starts = burst.map((detail) => Date.parse(detail.run.startedAt))
    const inOrder = starts.every((start, i) => i === 0 || start >= starts[i - 1])

    printTable([
      {
        measure: "(a) per job: CI run",
        value: mean(runWalls) / jobs,
        unit: "ms",
        baseline: mean(directWalls) / jobs,
        result: `overhead ${overhead.toFixed(0)} ms/job (goal < 300)`
      },
      {
        measure: "(b) push -> job start",
        value: percentile(latencies, 99),
        unit: "ms p99",
        baseline: percentile(latencies, 50),
        result: `p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms (goal p99 < 1000)`
      },
      {
        measure: `(c) burst of ${BURST} (pro)`,
        value: burstSeconds,
        unit: "s",
        baseline: BURST * 0.5 / 5,
        result: `all succeeded: ${allSucceeded}, max running ${maxRunning} (limit 5), in order: ${inOrder}`
      }
    ])
    console.log(`baseline: (a) the same commands spawned directly; (b) p50; (c) ${BURST} × 0.5 s / 5 slots`)
  } finally {
    Fs.rmSync(home, { recursive: true, force: true })
    await canopy.close()
  }
}

await main()
