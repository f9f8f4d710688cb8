import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { cpuMs, cpuMsWithChildren, loadAverage } from "./cpu.ts"
import { generateHistory, HISTORY, LATE_COMMITS, LATE_TAGS } from "./git-history.ts"
import { run } from "./git-repo.ts"
import { countingProxy, startHttpBackend } from "./git-servers.ts"
import { printTable, startCanopyOnEmbeddedPostgres } from "./support.ts"

/**
 * The real-history case of `bench:git`, robust to a noisy machine: Canopy with heavy git work
 * niced (`GIT_HEAVY_NICE`, one process per level, each on its own embedded Postgres) and
 * `git http-backend` take turns. Each round pushes the generated history whole (every branch
 * and tag in one push) into a fresh repository on every server, clones it, pushes 20 more
 * commits and 10 tags and fetches them; every step runs on all servers back to back, in an
 * order rotated each round, so a burst of load elsewhere hits them alike. Per step and nice
 * level the table shows the median of the per-round ratios Canopy / http-backend (each
 * ratio taken within one round), their spread, and Canopy's CPU (per pushed ref for pushes),
 * read from /proc: its own, and that of the git processes it ran.
 *
 * Env: HISTORY_ROUNDS (3), HISTORY_NICE (nice levels compared, "10,0"), and the history's
 * size (see `git-history.ts`).
 */

interface Step {
  readonly ms: number
  readonly bytes: number
  readonly cpuMs: number
  readonly gitCpuMs: number
}

interface Server {
  readonly name: string
  readonly proxy: Awaited<ReturnType<typeof countingProxy>>
  readonly auth: string
  readonly pid: number | undefined
  readonly prepare: (repo: string) => Promise<unknown>
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

export const compareHistoryRounds = async (dir: string, gitEnv: NodeJS.ProcessEnv) => {
  const rounds = Number(process.env.HISTORY_ROUNDS || 3)
  const niceLevels = (process.env.HISTORY_NICE ?? "10,0").split(",").map((level) => level.trim())
  const source = Path.join(dir, "history.git")
  const t0 = Date.now()
  const { lateRef } = await generateHistory(source, gitEnv)
  const refs = HISTORY.branches + 1 + HISTORY.tags
  console.log(
    `\ngenerated a history of ${HISTORY.commits} commits, ${HISTORY.branches + 1} branches, ${HISTORY.tags} tags ` +
      `(1 in ${HISTORY.annotatedEvery} annotated) in ${Date.now() - t0} ms`
  )

  const canopies = await Promise.all(niceLevels.map(async (nice) => {
    const canopy = await startCanopyOnEmbeddedPostgres({ GIT_HEAVY_NICE: nice })
    await canopy.admin("/orgs", { slug: "bench", name: "Bench", plan: "enterprise" })
    await canopy.admin("/orgs/bench/users", { username: "bench", email: "bench@example.com", role: "owner" })
    const { key } = await canopy.admin("/orgs/bench/keys", { username: "bench" })
    return { nice, canopy, key: key as string }
  }))
  const backendRoot = Path.join(dir, "history-backend")
  const backend = await startHttpBackend(backendRoot)
  const servers: Array<Server> = [
    ...await Promise.all(canopies.map(async ({ canopy, key, nice }) => ({
      name: `canopy nice ${nice}`,
      proxy: await countingProxy(Number(new URL(canopy.base).port)),
      auth: `git:${key}@`,
      pid: canopy.canopy.pid,
      prepare: (repo: string) =>
        fetch(`${canopy.base}/api/v1/code/repos`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ name: repo })
        }).then((r) => r.json())
    }))),
    {
      name: "http-backend",
      proxy: await countingProxy(backend.port),
      auth: "",
      pid: undefined,
      prepare: async (repo: string) => {
        const gitDir = Path.join(backendRoot, `bench/${repo}.git`)
        await run(["init", "-q", "--bare", gitDir], gitEnv)
        await run(["--git-dir", gitDir, "config", "http.receivepack", "true"], gitEnv)
      }
    }
  ]

  const stepNames = [
    `push all (${refs} refs)`,
    "clone",
    `push ${LATE_COMMITS} commits + ${LATE_TAGS} tags`,
    "fetch them"
  ] as const
  /** results[server][step][round] */
  const results = new Map(servers.map((server) => [server.name, stepNames.map(() => [] as Array<Step>)]))
  const loads: Array<number> = [loadAverage()]
  try {
    for (let round = 0; round < rounds; round++) {
      const repo = `history-${round}`
      const order = servers.map((_, i) => servers[(i + round) % servers.length])
      const work = new Map(servers.map((server) => {
        const path = Path.join(dir, `work-${round}-${server.name.replaceAll(" ", "-")}`)
        Fs.mkdirSync(path)
        return [server.name, path]
      }))
      for (const server of servers) await server.prepare(repo)
      const steps = (server: Server): ReadonlyArray<{ args: ReadonlyArray<string>; upload: boolean; cwd?: string }> => {
        const url = `http://${server.auth}127.0.0.1:${server.proxy.port}/bench/${repo}.git`
        const copy = Path.join(work.get(server.name)!, "copy.git")
        return [
          {
            args: [
              "--git-dir",
              source,
              "push",
              "-q",
              url,
              `${lateRef}:refs/heads/main`,
              "refs/heads/line-*:refs/heads/line-*",
              "refs/tags/v*:refs/tags/v*"
            ],
            upload: true
          },
          { args: ["clone", "-q", "--bare", url, copy], upload: false },
          {
            args: ["--git-dir", source, "push", "-q", url, "main:refs/heads/main", "refs/tags/late-*:refs/tags/late-*"],
            upload: true
          },
          {
            args: ["fetch", "-q", "origin", "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"],
            upload: false,
            cwd: copy
          }
        ]
      }
      for (let s = 0; s < stepNames.length; s++) {
        for (const server of order) {
          const step = steps(server)[s]
          server.proxy.counts.up = 0
          server.proxy.counts.down = 0
          const pid = server.pid
          const [cpu0, all0] = pid === undefined ? [0, 0] : [cpuMs(pid), cpuMsWithChildren(pid)]
          const started = performance.now()
          await run(["-c", "credential.helper=", ...step.args], gitEnv, undefined, step.cwd ?? work.get(server.name))
          const ms = performance.now() - started
          const cpu = pid === undefined ? 0 : cpuMs(pid) - cpu0
          results.get(server.name)![s].push({
            ms,
            bytes: step.upload ? server.proxy.counts.up : server.proxy.counts.down,
            cpuMs: cpu,
            gitCpuMs: pid === undefined ? 0 : cpuMsWithChildren(pid) - all0 - cpu
          })
        }
      }
      loads.push(loadAverage())
      console.error(`[bench] history round ${round + 1}/${rounds} done (load average ${loadAverage().toFixed(1)})`)
    }
  } finally {
    for (const server of servers) server.proxy.close()
    backend.close()
    await Promise.all(canopies.map(({ canopy }) => canopy.close()))
  }

  const backendSteps = results.get("http-backend")!
  const rows = stepNames.flatMap((step, s) =>
    servers.filter((server) => server.pid !== undefined).map((server) => {
      const own = results.get(server.name)![s]
      const ratios = own.map((c, round) => c.ms / backendSteps[s][round].ms)
      const pushed = s === 0 ? refs : s === 2 ? 1 + LATE_TAGS : undefined
      const cpu = median(own.map((c) => c.cpuMs))
      return {
        step,
        server: server.name,
        "canopy ms": median(own.map((c) => c.ms)),
        "http-backend ms": median(backendSteps[s].map((b) => b.ms)),
        "paired ratio median (goal ≤ 1.5)": median(ratios),
        "ratio min–max": `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}`,
        "bytes ratio": median(own.map((c, round) => c.bytes / backendSteps[s][round].bytes)),
        "canopy CPU ms": cpu,
        "+ its git ms": median(own.map((c) => c.gitCpuMs)),
        "CPU ms per ref (goal ≤ 5)": pushed === undefined ? "" : cpu / pushed
      }
    })
  )
  console.log(
    `\nReal history: ${HISTORY.commits} commits, ${HISTORY.branches + 1} branches, ${HISTORY.tags} tags; ` +
      `${rounds} interleaved rounds (load average ${Math.min(...loads).toFixed(1)}–${
        Math.max(...loads).toFixed(1)
      } on ${Os.availableParallelism()} cores)\n`
  )
  printTable(rows)
}
