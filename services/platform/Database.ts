import { PgClient } from "@effect/sql-pg"
import { Context, type Duration, Effect, Layer, Redacted } from "effect"
import type { SqlClient } from "effect/sql"
import * as Migrator from "effect/sql/Migrator"
import { migrations } from "../../migrations/index.ts"

/** The cheapest statement: whether Postgres still answers (`/readyz`). */
export const ping = (sql: SqlClient.SqlClient) => sql`SELECT 1`

/** The migrator locks its table, so runners starting together apply each migration once. */
const runMigrations = Migrator.make({})

/**
 * The system of record: a pooled Postgres client (`SqlClient`/`PgClient`) with every
 * migration applied before anything else starts. `Database` itself tells whether the
 * migrations ran (for `/readyz`) and which URL is in use.
 */
export class Database extends Context.Service<Database, {
  readonly url: Redacted.Redacted
  readonly migrated: ReadonlyArray<string>
}>()("canopy/platform/Database") {
  static readonly layer = (
    url: Redacted.Redacted,
    options?: {
      readonly maxConnections?: number
      /** The pool's timeouts (they run on the Effect clock): see `test/support/database.ts`. */
      readonly connectTimeout?: Duration.Input
      readonly idleTimeout?: Duration.Input
    }
  ) =>
    Layer.effect(
      Database,
      Effect.gen(function*() {
        const applied = yield* runMigrations({ loader: Migrator.fromRecord(migrations) }).pipe(
          Effect.orDie
        )
        return { url, migrated: applied.map(([id, name]) => `${id}_${name}`) }
      })
    ).pipe(
      Layer.provideMerge(PgClient.layer({
        url,
        maxConnections: options?.maxConnections ?? 20,
        connectTimeout: options?.connectTimeout,
        idleTimeout: options?.idleTimeout
      }))
    )
}
