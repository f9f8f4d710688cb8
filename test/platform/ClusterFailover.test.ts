import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { adminToken, bootstrapOrg, request } from "../support/app.ts"
import { createTestDatabase } from "../support/database.ts"
import { startRunner } from "../support/processes.ts"
import { eventually } from "../support/wait.ts"

/** Two runner processes, one Postgres: the organization entity lives on one runner at a time. */
describe("cluster runtime", () => {
  it.live(
    "an organization entity answers from both runners and survives the death of its host",
    () =>
      Effect.gen(function*() {
        const databaseUrl = yield* createTestDatabase
        const a = yield* startRunner(databaseUrl)
        const b = yield* startRunner(databaseUrl)
        const { key } = yield* bootstrapOrg(a.baseUrl, { slug: "cluster-org" })

        // Keep the whole test inside one rate-limit window.
        const second = new Date().getUTCSeconds()
        if (second > 20) yield* Effect.sleep(`${61 - second} seconds`)

        // Requests through either runner draw from the same window, kept by one entity.
        const remaining: Array<string | null> = []
        for (let i = 0; i < 10; i++) {
          const runner = i % 2 === 0 ? a : b
          const me = yield* request(`${runner.baseUrl}/api/v1/me`, { token: key })
          expect(me.status).toBe(200)
          remaining.push(me.headers.get("x-ratelimit-remaining"))
        }
        expect(remaining).toEqual(["49", "48", "47", "46", "45", "44", "43", "42", "41", "40"])

        const fromA = yield* request(`${a.baseUrl}/api/v1/admin/orgs/cluster-org/quota`, { token: adminToken })
        const fromB = yield* request(`${b.baseUrl}/api/v1/admin/orgs/cluster-org/quota`, { token: adminToken })
        expect(fromA.body).toMatchObject({ used: 10, remaining: 40 })
        expect(fromB.body).toEqual(fromA.body)
        const host = fromA.body.runner as string
        expect([a.runnerAddress, b.runnerAddress]).toContain(host)

        // Once the entity has written its window back, kill its host without warning.
        const stored = Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          return yield* sql<{ used: number }>`
            SELECT w.used FROM org_rate_windows w JOIN organizations o ON o.id = w.org_id
            WHERE o.slug = 'cluster-org'`
        }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 })))
        yield* eventually("the window written back", stored, (rows) => rows[0]?.used === 10)
        const [dead, survivor] = host === a.runnerAddress ? [a, b] : [b, a]
        dead.child.kill("SIGKILL")

        // The survivor takes over the shard and the entity resumes from its durable state.
        let after: any
        const deadline = Date.now() + 45_000
        while (Date.now() < deadline) {
          after = yield* request(`${survivor.baseUrl}/api/v1/admin/orgs/cluster-org/quota`, {
            token: adminToken
          }).pipe(Effect.timeout("10 seconds"), Effect.option)
          if (
            after._tag === "Some" && after.value.status === 200 && after.value.body.runner === survivor.runnerAddress
          ) {
            break
          }
          yield* Effect.sleep("500 millis")
        }
        expect(after._tag).toBe("Some")
        expect(after.value.body).toMatchObject({ runner: survivor.runnerAddress, used: 10, remaining: 40 })
        const me = yield* request(`${survivor.baseUrl}/api/v1/me`, { token: key })
        expect(me.status).toBe(200)
        expect(me.headers.get("x-ratelimit-remaining")).toBe("39")
      }).pipe(Effect.scoped),
    { timeout: 180_000 }
  )
})
