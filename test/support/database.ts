import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { inject } from "vitest"
import { Database } from "../../services/platform/Database.ts"

/** Creates an empty database on the run's Postgres and returns its URL (one per test file or test). */
export const createTestDatabase = Effect.gen(function*() {
  const adminUrl = inject("postgresUrl")
  const name = `t_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
  yield* Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe(`CREATE DATABASE ${name}`)
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(adminUrl), maxConnections: 1 })), Effect.orDie)
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
})

/** A migrated, empty database for one test file. */
export const TestDatabase = Layer.unwrap(
  Effect.map(createTestDatabase, (url) => Database.layer(Redacted.make(url), { maxConnections: 10 }))
)
