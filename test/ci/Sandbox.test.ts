import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { gitClient } from "../git/gitClient.ts"
import { request, startApp } from "../support/app.ts"
import { ciRepo, hostProcesses, withEnv } from "./support.ts"

// The canary (in the server's own environment) must never reach a job.
const canary = `canary-${process.pid}-${Date.now()}`
process.env.CANOPY_TEST_CANARY = canary

class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly dataDir: string
  readonly databaseUrl: string
}>()("test/ci/SandboxApp") {}
const TestAppLive = Layer.effect(
  TestApp,
  // Limits low enough for a shared machine.
  Effect.map(
    startApp(undefined, withEnv({ CI_MEMORY_MB: "1536", CI_MAX_PROCESSES: "128" })),
    (app) => ({ baseUrl: app.baseUrl, dataDir: app.config.dataDir, databaseUrl: app.databaseUrl })
  )
)

/** Every attempt prints `ESCAPED:<what>` when it worked, `blocked:<what>` when it did not. */
const escapeScript = `
const fs = require("fs"), net = require("net"), cp = require("child_process")
const cfg = JSON.parse(fs.readFileSync("escape.json", "utf8"))
const report = (what, escaped, detail) => console.log((escaped ? "ESCAPED:" : "blocked:") + what + (detail ? " (" + detail + ")" : ""))
const connect = (host, port) => new Promise((resolve) => {
  const socket = net.connect({ host, port })
  const done = (ok, why) => { socket.destroy(); resolve([ok, why]) }
  socket.setTimeout(3000, () => done(false, "timeout"))
  socket.on("connect", () => done(true))
  socket.on("error", (e) => done(false, e.code))
})
// Through the job's egress proxy (HTTPS_PROXY): the status line of its answer to CONNECT.
const viaProxy = (target) => new Promise((resolve) => {
  if (process.env.HTTPS_PROXY === undefined) return resolve("no proxy")
  const proxy = new URL(process.env.HTTPS_PROXY)
  const socket = net.connect({ host: proxy.hostname, port: Number(proxy.port) })
  let text = ""
  socket.setTimeout(8000, () => { socket.destroy(); resolve("timeout") })
  socket.on("connect", () => socket.write("CONNECT " + target + " HTTP/1.1\\r\\nHost: " + target + "\\r\\n\\r\\n"))
  socket.on("data", (chunk) => { text += chunk; if (text.includes("\\r\\n")) { socket.destroy(); resolve(text.split("\\r\\n")[0]) } })
  socket.on("error", (e) => resolve(e.code))
})
;(async () => {
  for (const target of cfg.proxied) {
    const status = await viaProxy(target)
    report("proxy " + target, /^HTTP\\/1\\.1 200/.test(status), status)
  }
  console.log("public via proxy: " + await viaProxy(cfg.public))
  for (const path of cfg.reads) {
    try { fs.readFileSync(path); report("read " + path, true) } catch (e) { report("read " + path, false, e.code) }
  }
  const env = JSON.stringify(process.env)
  report("env", cfg.secrets.some((s) => env.includes(s)), Object.keys(process.env).sort().join(","))
  let leaked = []
  for (const pid of fs.readdirSync("/proc").filter((n) => /^[0-9]+$/.test(n))) {
    try {
      const text = fs.readFileSync("/proc/" + pid + "/environ", "utf8") + fs.readFileSync("/proc/" + pid + "/cmdline", "utf8")
      if (cfg.secrets.some((s) => text.includes(s))) leaked.push(pid)
    } catch {}
  }
  report("proc", leaked.length > 0, leaked.join(","))
  for (const [host, port] of cfg.targets) {
    const [ok, why] = await connect(host, port)
    report("connect " + host + ":" + port, ok, why)
  }
  for (const path of cfg.writes) {
    try { fs.mkdirSync(require("path").dirname(path), { recursive: true }); fs.writeFileSync(path, "x") } catch {}
  }
  cp.spawn("sleep", [cfg.sleep], { detached: true, stdio: "ignore" }).unref()
  cp.exec("nohup setsid sleep " + cfg.sleep + " >/dev/null 2>&1 &")
  await new Promise((r) => setTimeout(r, 300))
  console.log("uid=" + process.getuid() + " done")
})()
`

// In a subshell: dash forks each element of `bomb | bomb &` itself, so the job's own shell
// would meet the limit too (and exit 2) when the bomb filled it between those two forks.
const forkBomb = "(bomb() { bomb | bomb & }; bomb); i=0; while [ $i -lt 50000 ]; do i=$((i+1)); done; echo survived"
const memoryHog = `node -e 'const a=[];try{for(;;)a.push(Buffer.allocUnsafe(64*1024*1024))}` +
  `catch(e){console.log("blocked:memory after "+a.length*64+" MiB: "+e.message)}'`

layer(TestAppLive, { excludeTestServices: true, timeout: "240 seconds" })("CI sandbox", (it) => {
  it.effect("escape attempts from inside a job all fail, and the server stays healthy", () =>
    Effect.gen(function*() {
      const { baseUrl, dataDir, databaseUrl } = yield* TestApp
      const git = yield* gitClient
      const appPort = Number(new URL(baseUrl).port)
      const pgPort = Number(new URL(databaseUrl).port)
      const hostAddresses = Object.values(Os.networkInterfaces()).flat()
        .filter((address) => address !== undefined && address.family === "IPv4" && !address.internal)
        .map((address) => address!.address)
      const marker = `canopy-escape-${process.pid}-${Date.now()}`
      const sleepSeconds = String(4000 + (process.pid % 1000))
      const masterKey = Path.join(dataDir, "master.key")
      expect(Fs.existsSync(masterKey)).toBe(true)
      const writes = [
        Path.join(dataDir, marker),
        `/usr/${marker}`,
        `/etc/${marker}`,
        Path.join(Os.tmpdir(), marker),
        `/root/${marker}`
      ]
      const config = {
        reads: [
          masterKey,
          Path.join(dataDir, "admin-token"),
          "/etc/shadow",
          "/proc/1/root/etc/shadow",
          "/root/.bashrc"
        ],
        secrets: [canary, Fs.readFileSync(masterKey, "utf8").trim().slice(0, 24)],
        targets: [
          ["127.0.0.1", appPort],
          ["127.0.0.1", pgPort],
          ["::1", appPort],
          ...hostAddresses.map((address) => [address, appPort]),
          ...hostAddresses.map((address) => [address, pgPort]),
          ["169.254.169.254", 80],
          ["10.0.0.1", 80],
          ["1.1.1.1", 443]
        ],
        writes,
        sleep: sleepSeconds,
        // With the network on (the default), the proxy must refuse all of these.
        proxied: [
          `127.0.0.1:${appPort}`,
          `localhost:${pgPort}`,
          `[::1]:${appPort}`,
          ...hostAddresses.map((address) => `${address}:${appPort}`),
          "169.254.169.254:80",
          "10.0.0.1:80",
          "192.168.0.1:443"
        ],
        public: "1.1.1.1:443"
      }
      const { ci } = yield* ciRepo(git, baseUrl, `ci-escape-${process.pid}`, {
        config: {
          // With network (the install job), then without (the test job).
          installCommand: "node escape.js",
          lintCommand: forkBomb,
          buildCommand: memoryHog,
          testCommand: "node escape.js"
        },
        files: { "escape.js": escapeScript, "escape.json": JSON.stringify(config), "README.md": "escape\n" }
      })

      const detail = yield* ci.completed(1, 120_000)
      const logOf = (name: string) =>
        Effect.map(ci.log(1, detail.jobs.find((job: any) => job.name === name).id), (log) => log.text)
      const installLog = yield* logOf("install")
      const testLog = yield* logOf("test")
      expect(detail.jobs.map((job: any) => `${job.name}:${job.conclusion}`), testLog).toEqual([
        "install:success",
        "lint:success",
        "build:success",
        "test:success"
      ])
      // Nothing escaped, with the network (install) or without it (test), and every attempt ran and reported.
      for (const log of [installLog, testLog]) {
        expect(log).not.toContain("ESCAPED")
        for (const path of config.reads) expect(log).toContain(`blocked:read ${path}`)
        expect(log).toContain("blocked:env")
        expect(log).not.toMatch(/DATABASE_URL|MASTER_KEY|ADMIN_TOKEN|DATA_DIR|CANOPY_TEST_CANARY/)
        expect(log).toContain("blocked:proc")
        for (const [host, port] of config.targets) expect(log).toContain(`blocked:connect ${host}:${port}`)
        expect(log).toMatch(/uid=2\d{5} done/)
      }
      // The egress proxy refuses the host, loopback, private and metadata addresses.
      for (const target of config.proxied) {
        expect(installLog).toContain(`blocked:proxy ${target} (HTTP/1.1 403 Forbidden)`)
      }
      // A public address passes the filter: 200, or 502 on a machine that cannot reach it; never 403.
      expect(installLog).toMatch(/public via proxy: HTTP\/1\.1 (200 Connection Established|502 Bad Gateway)/)
      // The test job has no network at all.
      for (const target of config.proxied) expect(testLog).toContain(`blocked:proxy ${target} (no proxy)`)
      expect(testLog).toContain("public via proxy: no proxy")
      // The fork bomb hit the process limit, the memory hog the memory limit, and both jobs ended.
      expect(yield* logOf("lint")).toMatch(/Cannot fork|Resource temporarily unavailable/)
      expect(yield* logOf("build")).toMatch(/blocked:memory after \d+ MiB/)

      // On the host: no file written, no process left behind, the server healthy.
      for (const path of writes) expect(Fs.existsSync(path), path).toBe(false)
      expect(hostProcesses(`sleep ${sleepSeconds}`)).toEqual([])
      expect(hostProcesses("bomb")).toEqual([])
      expect((yield* request(`${baseUrl}/healthz`)).status).toBe(200)
      expect((yield* ci.runs()).status).toBe(200)
    }).pipe(Effect.scoped), 180000)
})
