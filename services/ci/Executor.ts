import { Config, Context, Data, Effect, Layer, Option, type Scope } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as FsP from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import { runGit } from "../git/GitProcess.ts"
import { RepoCache } from "../git/RepoCache.ts"
import { makeOutboundGuard } from "../outbound/OutboundGuard.ts"
import { BlobStore } from "../storage/BlobStore.ts"
import { type EgressOptions, FORWARDER_SOURCE, PROXY_URL, startEgressProxy } from "./EgressProxy.ts"
import { joinArgv, makeJobCgroups } from "./JobCgroups.ts"
import { smudge } from "./LfsSmudge.ts"
import {
  defaultLimits,
  isRoot,
  SANDBOX_HOME,
  SANDBOX_PATH,
  sandboxArgv,
  type SandboxBind,
  type SandboxLimits
} from "./Sandbox.ts"
import { executorToolsPresent } from "./WorkerRole.ts"
import { sweepStaleWorkFolders, workFolderPrefix } from "./WorkFolders.ts"

/** The executor could not prepare or start a job (not a failing command: that is an exit code). */
export class ExecutorError extends Data.TaggedError("ExecutorError")<{ readonly message: string }> {}

/** A run's checkout: the commit's tree in a fresh folder, shared by the run's jobs in order. */
export interface Workspace {
  readonly dir: string
  readonly uid: number
}

export interface JobExit {
  /** The command's exit code; null when it was ended by a signal. */
  readonly exitCode: number | null
  readonly signal: string | null
}

export interface ExecOptions {
  readonly command: string
  /** Variables of the job (the spec's, the repository's); PATH and HOME are fixed by the executor. */
  readonly env: Readonly<Record<string, string>>
  readonly limits?: SandboxLimits | undefined
  /** Host folders mounted read-write into the sandbox (besides the workspace and HOME). */
  readonly binds?: ReadonlyArray<SandboxBind> | undefined
  /** Outbound network through the egress proxy, when this runner has it on (default false). */
  readonly network?: boolean | undefined
  /** Called with each piece of the job's output (stdout and stderr interleaved). */
  readonly onOutput: (chunk: Buffer) => void
}

/**
 * Where CI jobs run (GUIDE §14): one implementation now, a bubblewrap sandbox on this
 * machine. `checkout` exports a commit's tree from storage (LFS files smudged) into a fresh workspace (removed
 * with the scope); `exec` runs one command there. Interrupting `exec` (cancel, timeout)
 * sends SIGTERM to every process of the job and SIGKILL `killGraceMs` later.
 */
export class Executor extends Context.Service<Executor, {
  checkout(repo: { readonly id: string; readonly defaultBranch: string }, sha: string): Effect.Effect<
    Workspace,
    ExecutorError,
    Scope.Scope
  >
  exec(workspace: Workspace, options: ExecOptions): Effect.Effect<JobExit, ExecutorError>
  /** Whether this machine can run jobs (bubblewrap, prlimit and setpriv present). */
  readonly available: boolean
  /** `proxy`: jobs reach public addresses through the egress proxy; `none`: no network (`CI_NETWORK`). */
  readonly network: "proxy" | "none"
}>()("canopy/ci/Executor") {
  static readonly layerBubblewrap = (options?: BubblewrapOptions) => Layer.effect(Executor, makeBubblewrap(options))
}

const fail = (message: string) => (cause: unknown) =>
  new ExecutorError({ message: `${message}: ${cause instanceof Error ? cause.message : String(cause)}` })

/** Runs a host tool (tar, chown) to completion. */
const tool = (command: string, args: ReadonlyArray<string>) =>
  Effect.callback<void, ExecutorError>((resume) => {
    const child = spawn(command, [...args], { stdio: ["ignore", "ignore", "pipe"] })
    const err: Array<Buffer> = []
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk))
    child.on("error", (error) => resume(Effect.fail(fail(command)(error))))
    child.on("close", (code) =>
      resume(
        code === 0
          ? Effect.void
          : Effect.fail(new ExecutorError({ message: `${command} failed: ${Buffer.concat(err).toString().trim()}` }))
      ))
  })

/** A host uid no account uses, fresh per run, so runs cannot touch each other's files or processes. */
const freshUid = () => isRoot() ? 200_000 + Math.floor(Math.random() * 60_000) : process.getuid?.() ?? 65_534

export interface BubblewrapOptions {
  readonly workDir?: string
  readonly killGraceMs?: number
  /** The egress proxy's resolver and connector (tests point a public name at a local stand-in). */
  readonly egress?: EgressOptions
}

/** A Node binary for the in-sandbox forwarder: the system's when it has one, else this process's. */
const forwarderNode = () =>
  ["/usr/local/bin/node", "/usr/bin/node"].find((path) => Fs.existsSync(path)) ?? Fs.realpathSync(process.execPath)

const makeBubblewrap = Effect.fnUntraced(function*(options?: BubblewrapOptions) {
  const cache = yield* RepoCache
  const blobs = yield* BlobStore
  const configured = yield* Config.option(Config.String("CI_WORK_DIR"))
  // Outside DATA_DIR: the sandbox's uid must traverse to its folder, and must see nothing else.
  // One folder per process (removed when it stops), so runners sharing a machine never collide.
  const parent = options?.workDir ?? Option.getOrElse(configured, () => Os.tmpdir())
  const killGraceMs = options?.killGraceMs ?? 10_000
  const networkSetting = yield* Config.String("CI_NETWORK").pipe(Config.withDefault("proxy"))
  if (networkSetting !== "proxy" && networkSetting !== "none") {
    yield* Effect.logWarning(`CI: CI_NETWORK=${networkSetting} is neither proxy nor none; jobs run without network`)
  }
  const network = networkSetting === "proxy" ? "proxy" as const : "none" as const
  const allowCidrs = (yield* Config.String("CI_NETWORK_ALLOW_CIDRS").pipe(Config.withDefault("")))
    .split(",").map((cidr) => cidr.trim()).filter((cidr) => cidr !== "")
  // An invalid CIDR stops the start (a typo would otherwise silently block the mirror).
  yield* Effect.try({
    try: () => makeOutboundGuard({ allowPrivate: false, allowCidrs }),
    catch: (error) => new ExecutorError({ message: `CI_NETWORK_ALLOW_CIDRS: ${String(error)}` })
  }).pipe(Effect.orDie)
  const egress: EgressOptions = { allowCidrs, ...options?.egress }
  const node = network === "proxy" ? forwarderNode() : ""
  const cpus = yield* Config.Number("CI_CPUS").pipe(Config.withDefault(2))
  const cgroups = yield* Effect.promise(() => makeJobCgroups())
  yield* Effect.logInfo(
    cgroups === undefined
      ? "CI: no writable cgroup hierarchy: jobs are limited with prlimit only"
      : `CI: jobs are limited with cgroup v${cgroups.version} (memory, ${cpus} CPUs, processes) and prlimit`
  )
  const limits: SandboxLimits = {
    ...defaultLimits,
    memoryBytes: (yield* Config.Int("CI_MEMORY_MB").pipe(Config.withDefault(defaultLimits.memoryBytes / 1024 ** 2))) *
      1024 ** 2,
    processes: yield* Config.Int("CI_MAX_PROCESSES").pipe(Config.withDefault(defaultLimits.processes)),
    cpuSeconds: yield* Config.Int("CI_CPU_SECONDS").pipe(Config.withDefault(defaultLimits.cpuSeconds))
  }
  const root = yield* Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        await FsP.mkdir(parent, { recursive: true })
        // Folders of runners killed before cleaning up (only those whose process is gone).
        const swept = await sweepStaleWorkFolders(parent)
        const dir = await FsP.mkdtemp(Path.join(parent, workFolderPrefix()))
        // Traversable, not listable: a job cannot find other runs' folders.
        await FsP.chmod(dir, 0o711)
        return { dir, swept }
      },
      catch: fail("create the CI work folder")
    }),
    ({ dir }) => Effect.promise(() => FsP.rm(dir, { recursive: true, force: true }))
  ).pipe(
    Effect.tap(({ swept }) =>
      swept.length === 0
        ? Effect.void
        : Effect.logInfo(`CI: removed the work folders of runners that are gone: ${swept.join(", ")}`)
    ),
    Effect.map(({ dir }) => dir)
  )

  const checkout = (repo: { readonly id: string; readonly defaultBranch: string }, sha: string) =>
    Effect.acquireRelease(
      Effect.tryPromise({ try: () => FsP.mkdtemp(Path.join(root, "run-")), catch: fail("create a workspace") }),
      (dir) => Effect.promise(() => FsP.rm(dir, { recursive: true, force: true }))
    ).pipe(
      Effect.flatMap((dir) =>
        Effect.gen(function*() {
          const uid = freshUid()
          const workspace = Path.join(dir, "workspace")
          const home = Path.join(dir, "home")
          const tar = Path.join(dir, "tree.tar")
          yield* Effect.tryPromise({
            try: async () => {
              await FsP.mkdir(workspace)
              await FsP.mkdir(home)
              await FsP.writeFile(
                Path.join(dir, "passwd"),
                `root:x:0:0:root:/root:/bin/sh\nci:x:${uid}:${uid}:ci:${SANDBOX_HOME}:/bin/sh\n`,
                { mode: 0o644 }
              )
            },
            catch: fail("prepare a workspace")
          })
          yield* cache.use(repo, (synced) =>
            runGit({ gitDir: synced.dir, args: ["archive", "--format=tar", `--output=${tar}`, sha] })).pipe(
              Effect.mapError(fail(`export of ${sha.slice(0, 12)} failed`))
            )
          yield* tool("tar", ["-xf", tar, "-C", workspace, "--no-same-owner", "--no-same-permissions"])
          yield* Effect.promise(() =>
            FsP.rm(tar, { force: true })
          )
          yield* smudge(blobs, repo.id, workspace)
          if (network === "proxy") yield* egressProxy(dir, uid)
          if (isRoot()) {
            yield* tool("chown", ["-R", `${uid}:${uid}`, workspace, home])
            yield* Effect.tryPromise({ try: () => FsP.chown(dir, uid, uid), catch: fail("chown a workspace") })
          }
          return { dir, uid }
        })
      )
    )

  /** The run's egress proxy on `<dir>/net/proxy.sock` (closed with the workspace's scope). */
  const egressProxy = (dir: string, uid: number) =>
    Effect.gen(function*() {
      const net = Path.join(dir, "net")
      yield* Effect.tryPromise({
        try: async () => {
          await FsP.mkdir(net, { mode: 0o700 })
          await FsP.writeFile(Path.join(net, "forward.js"), FORWARDER_SOURCE, { mode: 0o444 })
        },
        catch: fail("prepare the job's network")
      })
      yield* Effect.acquireRelease(
        Effect.tryPromise({
          try: () => startEgressProxy(Path.join(net, "proxy.sock"), egress),
          catch: fail("start the egress proxy")
        }),
        (proxy) => Effect.promise(() => proxy.close())
      )
      if (isRoot()) {
        yield* Effect.tryPromise({
          try: async () => {
            await FsP.chown(net, uid, uid)
            await FsP.chown(Path.join(net, "proxy.sock"), uid, uid)
          },
          catch: fail("chown the job's network folder")
        })
      }
    })

  const proxyEnv: Record<string, string> = {
    HTTP_PROXY: PROXY_URL,
    HTTPS_PROXY: PROXY_URL,
    http_proxy: PROXY_URL,
    https_proxy: PROXY_URL,
    NO_PROXY: "localhost,127.0.0.1,::1",
    no_proxy: "localhost,127.0.0.1,::1",
    // Node's own fetch honours the variables only when asked to (Node ≥ 24).
    NODE_USE_ENV_PROXY: "1"
  }

  /** The job's cgroup (where this runner can make one), removed once its processes are gone. */
  const withCgroup = <A, E>(use: (prefix: ReadonlyArray<string>) => Effect.Effect<A, E>, jobLimits: SandboxLimits) =>
    cgroups === undefined ? use([]) : Effect.acquireUseRelease(
      Effect.tryPromise({
        try: () => cgroups.create({ memoryBytes: jobLimits.memoryBytes, cpus, processes: jobLimits.processes }),
        catch: fail("create the job's cgroup")
      }),
      (group) => use(joinArgv(group)),
      (group) => Effect.promise(() => group.remove())
    )

  const exec = (workspace: Workspace, options: ExecOptions) =>
    withCgroup((prefix) => run(workspace, options, prefix), options.limits ?? limits)

  const run = (workspace: Workspace, options: ExecOptions, prefix: ReadonlyArray<string>) =>
    Effect.callback<JobExit, ExecutorError>((resume) => {
      const withNetwork = network === "proxy" && options.network === true &&
        Fs.existsSync(Path.join(workspace.dir, "net", "proxy.sock"))
      const argv = sandboxArgv({
        workspace: Path.join(workspace.dir, "workspace"),
        home: Path.join(workspace.dir, "home"),
        passwd: Path.join(workspace.dir, "passwd"),
        uid: workspace.uid,
        limits: options.limits ?? limits,
        command: options.command,
        binds: options.binds,
        network: withNetwork ? { dir: Path.join(workspace.dir, "net"), node } : undefined
      })
      // The job's whole environment: nothing of Canopy's own is inherited.
      const env = {
        ...(withNetwork ? proxyEnv : {}),
        ...options.env,
        PATH: SANDBOX_PATH,
        HOME: SANDBOX_HOME,
        LANG: "C.UTF-8",
        USER: "ci"
      }
      const full = [...prefix, ...argv]
      const child = spawn(full[0], full.slice(1), { env, stdio: ["ignore", "pipe", "pipe", "pipe"] })
      let initPid: number | undefined
      let closed = false
      const info: Array<Buffer> = []
      const infoPipe = child.stdio[3] as NodeJS.ReadableStream
      infoPipe.on("data", (chunk: Buffer) => {
        info.push(chunk)
        const match = /"child-pid":\s*(\d+)/.exec(Buffer.concat(info).toString())
        if (match !== null) initPid = Number(match[1])
      })
      infoPipe.on("error", () => undefined)
      child.stdout?.on("data", options.onOutput)
      child.stderr?.on("data", options.onOutput)
      const done = new Promise<void>((resolve) => child.on("close", () => resolve()))
      child.on("error", (error) => resume(Effect.fail(fail("the sandbox did not start")(error))))
      child.on("close", (code, signal) => {
        closed = true
        resume(Effect.succeed({ exitCode: code, signal }))
      })
      // SIGTERM goes to init alone (bwrap itself would answer it by killing the namespace at once).
      const signal = (name: NodeJS.Signals) => {
        for (const pid of name === "SIGTERM" ? [initPid] : [initPid, child.pid]) {
          if (pid === undefined) continue
          try {
            process.kill(pid, name)
          } catch {
            // already gone
          }
        }
      }
      // Interrupted (cancel, timeout): SIGTERM to the namespace's init, which passes it to
      // every process there; SIGKILL after the grace. Killing init ends the whole namespace.
      return Effect.promise(async () => {
        if (closed) return
        if (initPid === undefined) signal("SIGKILL")
        else signal("SIGTERM")
        const grace = new Promise<"late">((resolve) => setTimeout(() => resolve("late"), killGraceMs).unref())
        if (await Promise.race([done.then(() => "done" as const), grace]) === "late") signal("SIGKILL")
        await done
      })
    })

  return Executor.of({
    checkout,
    exec,
    available: executorToolsPresent(),
    network
  })
})
