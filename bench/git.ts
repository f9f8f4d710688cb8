/**
 * `npm run bench:git`: `git clone`, an incremental `git fetch` and a `git push` of a new
 * branch against Canopy (a separate `src/main.ts` process on a temporary embedded
 * Postgres, blobs in a local folder) and, in the same run, against `git http-backend`
 * (Debian's /usr/lib/git-core/git-http-backend behind a small CGI bridge) serving the same
 * generated repository. Each server sits behind a byte-counting TCP proxy, so transferred
 * bytes are measured the same way for both.
 *
 * Steps per server: push `main~20` (initial import), clone (for Canopy twice: with the
 * runner's cache emptied first — packs come from the BlobStore — and with it warm), push
 * the last 20 commits of `main` from elsewhere, `git fetch` them into the first clone,
 * push the ten-commit `topic` branch.
 *
 * Then the real-history case (bench/git-history-rounds.ts): a generated history of 5,000
 * commits, 101 branches and 1,000 tags pushed whole, cloned, updated and fetched, in rounds
 * interleaving Canopy (once with heavy git work niced, once not) and http-backend, reported
 * as the median of paired ratios, with Canopy's CPU per pushed ref. Then the cost of branch
 * protection on a 100-commit signed push (bench/git-protection.ts).
 *
 * Env: COMMITS (default 3000), FILES (default 2000), LARGE (large binary files, default 4),
 * HISTORY_COMMITS (5000), HISTORY_BRANCHES (100), HISTORY_TAGS (1000), HISTORY_ANNOTATED_EVERY (5),
 * HISTORY_ROUNDS (3), HISTORY_NICE (the GIT_HEAVY_NICE levels compared, "10,0"),
 * ONLY=protection (only the branch protection part), ONLY=history (only the real-history case).
 */
import { Effect, Exit, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { startEmbeddedPostgres } from "../services/platform/EmbeddedPostgres.ts"
import { compareHistoryRounds } from "./git-history-rounds.ts"
import { benchProtection } from "./git-protection.ts"
import { generateRepository, isolatedGitEnv, run } from "./git-repo.ts"
import { countingProxy, startHttpBackend } from "./git-servers.ts"
import { freePort, printTable, startProcess, stop } from "./support.ts"

const env = (name: string, fallback: number) => Number(process.env[name] || fallback)
const COMMITS = env("COMMITS", 3000)
const FILES = env("FILES", 2000)
const LARGE = env("LARGE", 4)
const ONLY_PROTECTION = process.env.ONLY === "protection"
const ONLY_HISTORY = process.env.ONLY === "history"
const adminToken = "adm_bench_git"

interface Measure {
  readonly ms: number
  readonly down: number
  readonly up: number
}

/** Clone, fetch and push against Canopy and `git http-backend` serving the same generated repository. */
const compareWithHttpBackend = async (
  dir: string,
  gitEnv: NodeJS.ProcessEnv,
  canopyPort: number,
  canopyData: string,
  key: string,
  api: (path: string, body: unknown, token?: string) => Promise<any>
) => {
  const source = Path.join(dir, "source.git")
  const started = Date.now()
  const objects = await generateRepository(source, { commits: COMMITS, files: FILES, largeFiles: LARGE, env: gitEnv })
  const sourceBytes = Fs.readdirSync(Path.join(source, "objects/pack"))
    .reduce((sum, file) => sum + Fs.statSync(Path.join(source, "objects/pack", file)).size, 0)
  console.log(
    `generated ${COMMITS + 10} commits, ${objects} objects, ${(sourceBytes / 1e6).toFixed(1)} MB packed in ${
      Date.now() - started
    } ms`
  )
  const repo = await api("/api/v1/code/repos", { name: "repo" }, key)

  // git http-backend over a bare repository at the same path
  const backendRoot = Path.join(dir, "backend")
  await run(["init", "-q", "--bare", Path.join(backendRoot, "bench/repo.git")], gitEnv)
  await run(["--git-dir", Path.join(backendRoot, "bench/repo.git"), "config", "http.receivepack", "true"], gitEnv)
  const backend = await startHttpBackend(backendRoot)

  const servers = [
    { name: "canopy", proxy: await countingProxy(canopyPort), auth: `git:${key}@` },
    { name: "http-backend", proxy: await countingProxy(backend.port), auth: "" }
  ]
  const results: Record<string, Record<string, Measure>> = {}
  for (const server of servers) {
    const url = `http://${server.auth}127.0.0.1:${server.proxy.port}/bench/repo.git`
    const work = Path.join(dir, `work-${server.name}`)
    Fs.mkdirSync(work)
    const measure = async (args: ReadonlyArray<string>, cwd = work): Promise<Measure> => {
      server.proxy.counts.up = 0
      server.proxy.counts.down = 0
      const t0 = performance.now()
      await run(["-c", "credential.helper=", ...args], gitEnv, undefined, cwd)
      return { ms: performance.now() - t0, ...server.proxy.counts }
    }
    const own: Record<string, Measure> = {}
    own["push (initial import)"] = await measure(["--git-dir", source, "push", "-q", url, "main~20:refs/heads/main"])
    if (server.name === "canopy") {
      Fs.rmSync(Path.join(canopyData, "git-cache", repo.id), { recursive: true, force: true })
      own["clone (cold cache)"] = await measure(["clone", "-q", "--bare", url, "cold.git"])
    }
    own["clone"] = await measure(["clone", "-q", "--bare", url, "first.git"])
    await run(["--git-dir", source, "push", "-q", url, "main"], gitEnv)
    own["fetch (20 new commits)"] = await measure(
      ["fetch", "-q", "origin", "+refs/heads/*:refs/heads/*"],
      Path.join(work, "first.git")
    )
    own["push (new 10-commit branch)"] = await measure(["--git-dir", source, "push", "-q", url, "topic"])
    results[server.name] = own
  }

  const rows = Object.keys(results["canopy"]).map((step) => {
    const c = results["canopy"][step]
    const b = results["http-backend"][step] ?? results["http-backend"]["clone"]
    const isPush = step.startsWith("push")
    const cBytes = isPush ? c.up : c.down
    const bBytes = isPush ? b.up : b.down
    return {
      step,
      "canopy ms": c.ms,
      "http-backend ms": b.ms,
      "time ratio": c.ms / b.ms,
      "canopy MB": cBytes / 1e6,
      "http-backend MB": bBytes / 1e6,
      "bytes ratio": cBytes / bBytes
    }
  })
  console.log(`\nCOMMITS=${COMMITS} FILES=${FILES} LARGE=${LARGE} (bytes: received by the client, sent for pushes)\n`)
  printTable(rows)
  for (const server of servers) server.proxy.close()
  backend.close()
}

const main = async () => {
  const scope = Effect.runSync(Scope.make())
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-bench-git-"))
  Fs.chmodSync(dir, 0o755)
  const home = Path.join(dir, "home")
  Fs.mkdirSync(home)
  const gitEnv = isolatedGitEnv(home, "Bench", "bench@example.com")

  if (ONLY_HISTORY) {
    await compareHistoryRounds(dir, gitEnv)
    Fs.rmSync(dir, { recursive: true, force: true })
    return
  }

  // Canopy
  const pg = await Effect.runPromise(
    startEmbeddedPostgres({ dataDir: Path.join(dir, "pg") }).pipe(Scope.provide(scope))
  )
  const canopyPort = await freePort()
  const canopyData = Path.join(dir, "canopy")
  const canopy = await startProcess("src/main.ts", {
    DATABASE_URL: pg.url,
    PORT: String(canopyPort),
    HOST: "127.0.0.1",
    ADMIN_TOKEN: adminToken,
    DATA_DIR: canopyData
  }, `http://127.0.0.1:${canopyPort}/readyz`)
  const api = (path: string, body: unknown, token = adminToken) =>
    fetch(`http://127.0.0.1:${canopyPort}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    }).then((r) => r.json() as Promise<any>)
  await api("/api/v1/admin/orgs", { slug: "bench", name: "Bench", plan: "enterprise" })
  await api("/api/v1/admin/orgs/bench/users", { username: "bench", email: "bench@example.com", role: "owner" })
  const { key } = await api("/api/v1/admin/orgs/bench/keys", { username: "bench" })
  if (!ONLY_PROTECTION) {
    await compareWithHttpBackend(dir, gitEnv, canopyPort, canopyData, key, api)
    await compareHistoryRounds(dir, gitEnv)
  }

  const protection = await benchProtection({
    baseUrl: `http://127.0.0.1:${canopyPort}`,
    adminToken,
    org: "bench",
    dir,
    gitEnv,
    serverPid: canopy.pid!,
    pgDataDir: Path.join(dir, "pg")
  })
  console.log("\nBranch protection on push (goal: ratio under 1.10)\n")
  printTable(protection)

  await stop(canopy)
  await Effect.runPromise(Scope.close(scope, Exit.void))
  Fs.rmSync(dir, { recursive: true, force: true })
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
