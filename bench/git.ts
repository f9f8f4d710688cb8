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
 * Then the cost of branch protection on a 100-commit signed push (bench/git-protection.ts).
 *
 * Env: COMMITS (default 3000), FILES (default 2000), LARGE (large binary files, default 4),
 * ONLY=protection (only the branch protection part: no generated repository, no http-backend).
 */
import { Effect, Exit, Scope } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { startEmbeddedPostgres } from "../services/platform/EmbeddedPostgres.ts"
import { benchProtection } from "./git-protection.ts"
import { generateRepository, isolatedGitEnv, run } from "./git-repo.ts"
import { freePort, printTable, startProcess, stop } from "./support.ts"

const env = (name: string, fallback: number) => Number(process.env[name] || fallback)
const COMMITS = env("COMMITS", 3000)
const FILES = env("FILES", 2000)
const LARGE = env("LARGE", 4)
const ONLY_PROTECTION = process.env.ONLY === "protection"
const BACKEND = "/usr/lib/git-core/git-http-backend"
const adminToken = "adm_bench_git"

/** A TCP proxy to `port` that counts the bytes each way. */
const countingProxy = async (port: number) => {
  const counts = { up: 0, down: 0 }
  const server = Net.createServer((client) => {
    const upstream = Net.connect(port, "127.0.0.1")
    client.on("data", (chunk) => counts.up += chunk.length)
    upstream.on("data", (chunk) => counts.down += chunk.length)
    client.pipe(upstream).pipe(client)
    client.on("error", () => upstream.destroy())
    upstream.on("error", () => client.destroy())
  })
  const listen = await freePort()
  await new Promise<void>((resolve) => server.listen(listen, "127.0.0.1", resolve))
  return { port: listen, counts, close: () => server.close() }
}

/** `git http-backend` as CGI behind node:http (what a web server would do). */
const startHttpBackend = async (projectRoot: string) => {
  const server = Http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost")
    const child = spawn(BACKEND, [], {
      env: {
        PATH: process.env.PATH,
        GIT_PROJECT_ROOT: projectRoot,
        GIT_HTTP_EXPORT_ALL: "1",
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? "GET",
        CONTENT_TYPE: req.headers["content-type"] ?? "",
        ...(req.headers["content-length"] ? { CONTENT_LENGTH: req.headers["content-length"] } : {}),
        HTTP_CONTENT_ENCODING: req.headers["content-encoding"] ?? "",
        GIT_PROTOCOL: String(req.headers["git-protocol"] ?? ""),
        REMOTE_USER: "bench",
        REMOTE_ADDR: "127.0.0.1"
      }
    })
    req.pipe(child.stdin)
    let head = Buffer.alloc(0)
    let headersDone = false
    child.stdout.on("data", (chunk: Buffer) => {
      if (headersDone) return void res.write(chunk)
      head = Buffer.concat([head, chunk])
      const end = head.indexOf("\r\n\r\n")
      if (end < 0) return
      headersDone = true
      let status = 200
      for (const line of head.subarray(0, end).toString("latin1").split("\r\n")) {
        const colon = line.indexOf(":")
        const name = line.slice(0, colon).trim()
        const value = line.slice(colon + 1).trim()
        if (name.toLowerCase() === "status") status = Number(value.split(" ")[0])
        else res.setHeader(name, value)
      }
      res.writeHead(status)
      res.write(head.subarray(end + 4))
    })
    child.stdout.on("end", () => res.end())
  })
  const port = await freePort()
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  return { port, close: () => server.close() }
}

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
  if (!ONLY_PROTECTION) await compareWithHttpBackend(dir, gitEnv, canopyPort, canopyData, key, api)

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
