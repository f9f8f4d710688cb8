/**
 * `npm run bench:pulls-merge`: server-side pull request merges against the `git` command line.
 *
 * A generated repository (`COMMITS` commits, `FILES` files; defaults 5,000 and 20,000) gets
 * `PRS` pull request branches per strategy (default 200), each changing 10 files in two
 * commits. Canopy merges them one after another through `POST …/pulls/{n}/merge` with each
 * strategy; the baseline does the same merges with the git CLI's plumbing on a local bare
 * clone (`merge-tree --write-tree`, `commit-tree`, `update-ref`: what a merge in a bare
 * repository takes), in the same run. Prints merges per second and p50/p99 latency for both
 * and the ratio.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { generateRepository, isolatedGitEnv, run } from "./git-repo.ts"
import { percentile, printTable, startCanopyOnEmbeddedPostgres } from "./support.ts"

const env = (name: string, fallback: number) => Number(process.env[name] || fallback)
const COMMITS = env("COMMITS", 5000)
const FILES = env("FILES", 20000)
const PRS = env("PRS", 200)
const FILES_PER_PR = 10
const STRATEGIES = ["merge", "squash", "rebase"] as const
type Strategy = typeof STRATEGIES[number]

const branchOf = (strategy: Strategy, i: number) => `pr/${strategy}/${i}`

/** Adds the pull request branches with `git fast-import`: each appends a line to 10 files of main, in two commits. */
const addBranches = async (gitDir: string, gitEnv: NodeJS.ProcessEnv) => {
  const tree = (await run(["--git-dir", gitDir, "ls-tree", "-r", "--name-only", "main"], gitEnv)).trim().split("\n")
    .filter((path) => path.endsWith(".ts"))
  const wanted = STRATEGIES.length * PRS * FILES_PER_PR
  if (tree.length < wanted) throw new Error(`FILES must be at least ${wanted} (every pull request edits its own files)`)
  const paths = tree.slice(0, wanted)
  const blobs = await run(
    ["--git-dir", gitDir, "cat-file", "--batch"],
    gitEnv,
    Buffer.from(paths.map((p) => `main:${p}\n`).join(""))
  )
  // --batch output: "<sha> blob <size>\n<content>\n" per path.
  const contents: Array<string> = []
  let at = 0
  while (contents.length < paths.length) {
    const header = blobs.indexOf("\n", at)
    const size = Number(blobs.slice(at, header).split(" ")[2])
    const start = header + 1
    contents.push(Buffer.from(blobs.slice(start)).subarray(0, size).toString("utf8"))
    at = start + Buffer.byteLength(contents.at(-1)!) + 1
  }
  const chunks: Array<string> = []
  let time = 1_800_000_000
  let next = 0
  for (const strategy of STRATEGIES) {
    for (let i = 0; i < PRS; i++) {
      const files = Array.from({ length: FILES_PER_PR }, () => next++)
      for (const [c, part] of [files.slice(0, 5), files.slice(5)].entries()) {
        time += 60
        const message = `${strategy} ${i}: part ${c + 1}`
        chunks.push(`commit refs/heads/${branchOf(strategy, i)}\n`)
        chunks.push(`author Contributor <contributor@example.com> ${time} +0000\n`)
        chunks.push(`committer Contributor <contributor@example.com> ${time} +0000\n`)
        chunks.push(`data ${Buffer.byteLength(message)}\n${message}\n`)
        if (c === 0) chunks.push(`from refs/heads/main^0\n`)
        for (const f of part) {
          const content = `${contents[f]}// ${strategy} ${i}\n`
          chunks.push(`M 100644 inline ${paths[f]}\ndata ${Buffer.byteLength(content)}\n${content}\n`)
        }
      }
    }
  }
  await run(["--git-dir", gitDir, "fast-import", "--quiet"], gitEnv, Buffer.from(chunks.join("")))
}

/** The same merge with the git CLI on a bare repository. */
const gitMerge = async (gitDir: string, gitEnv: NodeJS.ProcessEnv, strategy: Strategy, branch: string) => {
  const git = (args: ReadonlyArray<string>, input?: string) =>
    run(["--git-dir", gitDir, ...args], gitEnv, input === undefined ? undefined : Buffer.from(input)).then((out) =>
      out.trim()
    )
  const main = await git(["rev-parse", "main"])
  const head = await git(["rev-parse", branch])
  let tip: string
  if (strategy === "rebase") {
    const commits = (await git(["rev-list", "--reverse", "--no-merges", head, "--not", main])).split("\n")
    tip = main
    for (const commit of commits) {
      // Cherry-pick without a work tree (git 2.39 has no merge-tree --merge-base): the parent as base.
      const parent = await git(["rev-parse", `${commit}^`])
      const base = await git(["commit-tree", `${parent}^{tree}`], "base\n")
      const ours = await git(["commit-tree", `${tip}^{tree}`, "-p", base], "ours\n")
      const theirs = await git(["commit-tree", `${commit}^{tree}`, "-p", base], "theirs\n")
      const tree = (await git(["merge-tree", "--write-tree", ours, theirs])).split("\n")[0]
      tip = await git(["commit-tree", tree, "-p", tip], `${await git(["log", "-1", "--format=%B", commit])}\n`)
    }
  } else {
    const tree = (await git(["merge-tree", "--write-tree", main, head])).split("\n")[0]
    const parents = strategy === "merge" ? ["-p", main, "-p", head] : ["-p", main]
    tip = await git(["commit-tree", tree, ...parents], `Merge ${branch}\n`)
  }
  await git(["update-ref", "refs/heads/main", tip, main])
}

interface Timing {
  readonly strategy: Strategy
  readonly canopy: ReadonlyArray<number>
  readonly git: ReadonlyArray<number>
}

const main = async () => {
  const canopy = await startCanopyOnEmbeddedPostgres()
  const dir = canopy.dir
  const home = Path.join(dir, "home")
  Fs.mkdirSync(home)
  const gitEnv = isolatedGitEnv(home, "Merger", "merger@example.com")
  try {
    const source = Path.join(dir, "source.git")
    let started = Date.now()
    const objects = await generateRepository(source, { commits: COMMITS, files: FILES, largeFiles: 0, env: gitEnv })
    await addBranches(source, gitEnv)
    console.log(
      `generated ${COMMITS} commits, ${FILES} files, ${objects} objects and ${STRATEGIES.length * PRS} branches in ${
        Date.now() - started
      } ms`
    )
    const local = Path.join(dir, "local.git")
    await run(["clone", "-q", "--bare", source, local], gitEnv)

    await canopy.admin("/orgs", { slug: "bench", name: "Bench", plan: "enterprise" })
    await canopy.admin("/orgs/bench/users", { username: "merger", email: "merger@example.com", role: "owner" })
    const { key } = await canopy.admin("/orgs/bench/keys", { username: "merger" })
    const call = (method: string, path: string, body?: unknown) =>
      fetch(`${canopy.base}/api/v1/code${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body)
      }).then(async (r) => ({ status: r.status, body: await r.json() as any }))
    await call("POST", "/repos", { name: "repo" })
    started = Date.now()
    const remote = `${canopy.base.replace("http://", `http://git:${key}@`)}/bench/repo.git`
    await run(["--git-dir", source, "push", "-q", remote, "refs/heads/*:refs/heads/*"], gitEnv)
    console.log(`pushed to Canopy in ${Date.now() - started} ms`)

    const numbers = new Map<string, number>()
    started = Date.now()
    for (const strategy of STRATEGIES) {
      for (let i = 0; i < PRS; i++) {
        const branch = branchOf(strategy, i)
        const created = await call("POST", "/repos/bench/repo/pulls", { title: branch, sourceBranch: branch })
        if (created.status !== 201) throw new Error(`create ${branch}: ${JSON.stringify(created.body)}`)
        numbers.set(branch, created.body.number)
      }
    }
    console.log(`opened ${numbers.size} pull requests in ${Date.now() - started} ms`)
    // Let the entities finish their first mergeability computations (background work).
    started = Date.now()
    while (true) {
      const open = await call("GET", "/repos/bench/repo/pulls?state=open")
      const computing = open.body.pullRequests.filter((pr: any) => pr.mergeable === null).length
      if (computing === 0) break
      await new Promise((resolve) => setTimeout(resolve, 1_000))
    }
    console.log(`mergeability of every pull request computed after ${Date.now() - started} ms more`)

    const timings: Array<Timing> = []
    for (const strategy of STRATEGIES) {
      const canopyMs: Array<number> = []
      const gitMs: Array<number> = []
      for (let i = 0; i < PRS; i++) {
        const branch = branchOf(strategy, i)
        let t = performance.now()
        const merged = await call("POST", `/repos/bench/repo/pulls/${numbers.get(branch)}/merge`, { strategy })
        canopyMs.push(performance.now() - t)
        if (merged.status !== 200) throw new Error(`merge ${branch}: ${merged.status} ${JSON.stringify(merged.body)}`)
        t = performance.now()
        await gitMerge(local, gitEnv, strategy, branch)
        gitMs.push(performance.now() - t)
      }
      timings.push({ strategy, canopy: canopyMs, git: gitMs })
    }

    const rows = timings.flatMap(({ canopy: c, git: g, strategy }) => {
      const stats = (ms: ReadonlyArray<number>) => {
        const sorted = [...ms].sort((a, b) => a - b)
        const total = ms.reduce((sum, x) => sum + x, 0)
        return { perSecond: (ms.length * 1000) / total, p50: percentile(sorted, 50), p99: percentile(sorted, 99) }
      }
      const a = stats(c)
      const b = stats(g)
      return [{
        strategy,
        "canopy merges/s": a.perSecond,
        "canopy p50 ms": a.p50,
        "canopy p99 ms": a.p99,
        "git merges/s": b.perSecond,
        "git p50 ms": b.p50,
        "git p99 ms": b.p99,
        "ratio (git/canopy rate)": b.perSecond / a.perSecond
      }]
    })
    console.log(`\n${PRS} merges per strategy, ${FILES_PER_PR} files each, into ${COMMITS} commits × ${FILES} files`)
    printTable(rows)
  } finally {
    await canopy.close()
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
