import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { adminToken, bootstrapOrg, request } from "../support/app.ts"
import { createTestDatabase } from "../support/database.ts"
import { startRunner } from "../support/processes.ts"
import { eventually } from "../support/wait.ts"

/**
 * One run on two fresh runners: "done", or "window ended" when the organization's rate-limit
 * window rolled over during it (the counts it checks then start again from zero). Every
 * answer's window end (`x-ratelimit-reset`, the quota's `reset`) is compared with the first.
 */
const failoverRun = Effect.gen(function*() {
  const databaseUrl = yield* createTestDatabase
  const a = yield* startRunner(databaseUrl)
  const b = yield* startRunner(databaseUrl)
  const { key } = yield* bootstrapOrg(a.baseUrl, { slug: "cluster-org" })

  // Requests through either runner draw from the same window, kept by one entity.
  const remaining: Array<string | null> = []
  const windowEnds = new Set<number>()
  for (let i = 0; i < 10; i++) {
    const runner = i % 2 === 0 ? a : b
    const me = yield* request(`${runner.baseUrl}/api/v1/me`, { token: key })
    expect(me.status).toBe(200)
    remaining.push(me.headers.get("x-ratelimit-remaining"))
    windowEnds.add(Number(me.headers.get("x-ratelimit-reset")))
  }
  if (windowEnds.size !== 1) return "window ended" as const
  const [windowEnd] = windowEnds
  expect(remaining).toEqual(["49", "48", "47", "46", "45", "44", "43", "42", "41", "40"])

  const fromA = yield* request(`${a.baseUrl}/api/v1/admin/orgs/cluster-org/quota`, { token: adminToken })
  const fromB = yield* request(`${b.baseUrl}/api/v1/admin/orgs/cluster-org/quota`, { token: adminToken })
  if (fromA.body.reset !== windowEnd || fromB.body.reset !== windowEnd) return "window ended" as const
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
  if (after.value.body.reset !== windowEnd) return "window ended" as const
  expect(after.value.body).toMatchObject({ runner: survivor.runnerAddress, used: 10, remaining: 40 })
  const me = yield* request(`${survivor.baseUrl}/api/v1/me`, { token: key })
  expect(me.status).toBe(200)
  if (Number(me.headers.get("x-ratelimit-reset")) !== windowEnd) return "window ended" as const
  expect(me.headers.get("x-ratelimit-remaining")).toBe("39")
  return "done" as const
}).pipe(Effect.scoped)

/** Two runner processes, one Postgres: the organization entity lives on one runner at a time. */
describe("cluster runtime", () => {
  it.live(
    "an organization entity answers from both runners and survives the death of its host",
    () =>
      Effect.gen(function*() {
        // Started at once; a run that a window's end cut through goes again early in a new window.
        if ((yield* failoverRun) === "done") return
        const second = new Date().getUTCSeconds()
        if (second > 20) yield* Effect.sleep(`${61 - second} seconds`)
        expect(yield* failoverRun).toBe("done")
      }),
    { timeout: 240_000 }
  )
})
