import * as Fs from "node:fs"
import * as Path from "node:path"
import { cpuMs, cpuMsWithChildren, loadAverage } from "./cpu.ts"
import { run } from "./git-repo.ts"
import { countingProxy, startHttpBackend } from "./git-servers.ts"
import { printTable } from "./support.ts"

const env = (name: string, fallback: number) => Number(process.env[name] || fallback)
/** The real-history case (express had 6,413 commits, 19 branches, 304 tags of which 50 annotated). */
export const HISTORY = {
  commits: env("HISTORY_COMMITS", 5000),
  branches: env("HISTORY_BRANCHES", 100),
  tags: env("HISTORY_TAGS", 1000),
  /** One tag in this many is annotated. */
  annotatedEvery: env("HISTORY_ANNOTATED_EVERY", 5)
}
/** Commits of each side branch; the rest of `commits` is `main`. */
const BRANCH_COMMITS = 8
/** Commits on `main` (and tags on them) held back from the first push, for the incremental push and fetch. */
const LATE_COMMITS = 20
const LATE_TAGS = 10

/**
 * A history shaped like a real project's, with `git fast-import`: a long `main` editing a few
 * of 300 files per commit, `branches` side branches of a few commits forking off it along the
 * way (release lines, topics), and `tags` tags spread along `main`, one in `annotatedEvery`
 * annotated. `LATE_COMMITS` commits at the top of main and `LATE_TAGS` tags on them are
 * pushed only in the second push.
 */
export const generateHistory = async (gitDir: string, gitEnv: NodeJS.ProcessEnv) => {
  const { annotatedEvery, branches, tags } = HISTORY
  const mainCommits = Math.max(LATE_COMMITS + 10, HISTORY.commits - branches * BRANCH_COMMITS)
  let seed = 7
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
  const word = () => Math.floor(random() * 1e9).toString(36)
  const paths = Array.from({ length: 300 }, (_, i) => `lib/m${i % 12}/file-${i}.js`)
  const contents = paths.map(() => Array.from({ length: 30 }, () => `${word()} ${word()} ${word()}`))
  const chunks: Array<string> = []
  const data = (text: string) => chunks.push(`data ${Buffer.byteLength(text)}\n${text}\n`)
  let mark = 0
  let time = 1_600_000_000
  const commit = (ref: string, message: string, from: string | undefined, edits: number) => {
    mark++
    time += 3600
    chunks.push(`commit ${ref}\nmark :${mark}\n`)
    chunks.push(`author Dev <dev@example.com> ${time} +0000\ncommitter Dev <dev@example.com> ${time} +0000\n`)
    data(message)
    if (from !== undefined) chunks.push(`from ${from}\n`)
    const files = from === undefined ?
      paths.map((_, i) => i) :
      Array.from({ length: edits }, () => Math.floor(random() * paths.length))
    for (const i of files) {
      contents[i][Math.floor(random() * contents[i].length)] = `${word()} ${word()} ${word()}`
      chunks.push(`M 100644 inline ${paths[i]}\n`)
      data(contents[i].join("\n") + "\n")
    }
    return `:${mark}`
  }
  const main: Array<string> = []
  for (let c = 0; c < mainCommits; c++) {
    main.push(commit("refs/heads/main", `change ${c}: ${word()}`, main[c - 1], 3))
  }
  const early = mainCommits - LATE_COMMITS
  for (let b = 0; b < branches; b++) {
    let head = main[Math.floor(((b + 1) * early) / (branches + 1))]
    for (let c = 0; c < BRANCH_COMMITS; c++) head = commit(`refs/heads/line-${b}`, `line ${b}: ${c}`, head, 2)
  }
  const tag = (name: string, target: string, index: number) => {
    if (index % annotatedEvery === 0) {
      chunks.push(`tag ${name}\nfrom ${target}\ntagger Dev <dev@example.com> ${time} +0000\n`)
      data(`release ${name}\n`)
    } else {
      chunks.push(`reset refs/tags/${name}\nfrom ${target}\n\n`)
    }
  }
  for (let t = 0; t < tags; t++) tag(`v${t}`, main[Math.floor((t * early) / tags)], t)
  for (let t = 0; t < LATE_TAGS; t++) tag(`late-${t}`, main[early + Math.floor((t * LATE_COMMITS) / LATE_TAGS)], t)
  await run(["init", "-q", "--bare", gitDir], gitEnv)
  await run(["--git-dir", gitDir, "fast-import", "--quiet"], gitEnv, Buffer.from(chunks.join("")))
  await run(["--git-dir", gitDir, "repack", "-a", "-d", "-q"], gitEnv)
  return { mainCommits, lateRef: `main~${LATE_COMMITS}` }
}

interface Step {
  readonly ms: number
  readonly bytes: number
  readonly cpuMs?: number
  readonly cpuWithGitMs?: number
}

/**
 * The real-history case of `bench:git`: the generated history pushed whole (every branch and
 * tag in one push), cloned, then 20 commits and 10 tags pushed and fetched, against Canopy
 * and `git http-backend`. Canopy's CPU during each push is read from /proc (its own, and with
 * the git processes it ran) and divided by the refs pushed.
 */
export const compareHistory = async (options: {
  readonly dir: string
  readonly gitEnv: NodeJS.ProcessEnv
  readonly canopyPort: number
  readonly canopyPid: number
  readonly key: string
  readonly createRepo: (name: string) => Promise<unknown>
}) => {
  const { dir, gitEnv } = options
  const source = Path.join(dir, "history.git")
  const t0 = Date.now()
  const { lateRef } = await generateHistory(source, gitEnv)
  const refs = HISTORY.branches + 1 + HISTORY.tags
  console.log(
    `\ngenerated a history of ${HISTORY.commits} commits, ${HISTORY.branches + 1} branches, ${HISTORY.tags} tags ` +
      `(1 in ${HISTORY.annotatedEvery} annotated) in ${Date.now() - t0} ms`
  )
  await options.createRepo("history")
  const backendRoot = Path.join(dir, "history-backend")
  await run(["init", "-q", "--bare", Path.join(backendRoot, "bench/history.git")], gitEnv)
  await run(["--git-dir", Path.join(backendRoot, "bench/history.git"), "config", "http.receivepack", "true"], gitEnv)
  const backend = await startHttpBackend(backendRoot)
  const servers = [
    {
      name: "canopy",
      proxy: await countingProxy(options.canopyPort),
      auth: `git:${options.key}@`,
      pid: options.canopyPid
    },
    { name: "http-backend", proxy: await countingProxy(backend.port), auth: "", pid: undefined }
  ]
  const results: Record<string, Record<string, Step>> = {}
  for (const server of servers) {
    const url = `http://${server.auth}127.0.0.1:${server.proxy.port}/bench/history.git`
    const work = Path.join(dir, `history-${server.name}`)
    Fs.mkdirSync(work)
    const measure = async (args: ReadonlyArray<string>, upload: boolean, cwd = work): Promise<Step> => {
      server.proxy.counts.up = 0
      server.proxy.counts.down = 0
      const [cpu0, git0] = server.pid === undefined ? [0, 0] : [cpuMs(server.pid), cpuMsWithChildren(server.pid)]
      const started = performance.now()
      await run(["-c", "credential.helper=", ...args], gitEnv, undefined, cwd)
      const ms = performance.now() - started
      const bytes = upload ? server.proxy.counts.up : server.proxy.counts.down
      if (server.pid === undefined) return { ms, bytes }
      return { ms, bytes, cpuMs: cpuMs(server.pid) - cpu0, cpuWithGitMs: cpuMsWithChildren(server.pid) - git0 }
    }
    const own: Record<string, Step> = {}
    own[`push all (${refs} refs)`] = await measure([
      "--git-dir",
      source,
      "push",
      "-q",
      url,
      `${lateRef}:refs/heads/main`,
      "refs/heads/line-*:refs/heads/line-*",
      "refs/tags/v*:refs/tags/v*"
    ], true)
    own["clone"] = await measure(["clone", "-q", "--bare", url, "copy.git"], false)
    own[`push ${LATE_COMMITS} commits + ${LATE_TAGS} tags`] = await measure(
      ["--git-dir", source, "push", "-q", url, "main:refs/heads/main", "refs/tags/late-*:refs/tags/late-*"],
      true
    )
    own["fetch them"] = await measure(
      ["fetch", "-q", "origin", "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"],
      false,
      Path.join(work, "copy.git")
    )
    results[server.name] = own
  }
  const rows = Object.keys(results["canopy"]).map((step) => {
    const c = results["canopy"][step]
    const b = results["http-backend"][step]
    const pushed = step.startsWith("push all") ? refs : step.startsWith("push") ? 1 + LATE_TAGS : undefined
    return {
      step,
      "canopy ms": c.ms,
      "http-backend ms": b.ms,
      "time ratio (goal ≤ 1.5)": c.ms / b.ms,
      "bytes ratio": c.bytes / b.bytes,
      "canopy CPU ms": c.cpuMs ?? 0,
      "+ its git ms": (c.cpuWithGitMs ?? 0) - (c.cpuMs ?? 0),
      "canopy CPU ms per ref (goal ≤ 5)": pushed === undefined ? "" : (c.cpuMs ?? 0) / pushed
    }
  })
  console.log(
    `\nReal history: ${HISTORY.commits} commits, ${HISTORY.branches + 1} branches, ${HISTORY.tags} tags ` +
      `(load average ${loadAverage().toFixed(1)} on ${
        Fs.readFileSync("/proc/cpuinfo", "utf8").split("processor").length - 1
      } cores)\n`
  )
  printTable(rows)
  for (const server of servers) server.proxy.close()
  backend.close()
}
