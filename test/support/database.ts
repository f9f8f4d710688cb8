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

/**
 * The database for a test that moves a `TestClock`: the pool's connect and idle timeouts run
 * on the Effect clock, so a jump of days would close its idle connections and fail the
 * connection being opened meanwhile ("Connection timed out") though it took milliseconds.
 * The database is a real server in real time: its timeouts are set beyond any jump.
 */
export const databaseUnderTestClock = (url: string, maxConnections: number) =>
  Database.layer(Redacted.make(url), { maxConnections, connectTimeout: "1000 days", idleTimeout: "1000 days" })

/** A migrated, empty database for one test file. */
export const TestDatabase = Layer.unwrap(
  Effect.map(createTestDatabase, (url) => Database.layer(Redacted.make(url), { maxConnections: 10 }))
)
