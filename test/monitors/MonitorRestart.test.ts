import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { publish } from "../../services/events/Events.ts"
import { CheckRecorder } from "../../services/monitors/CheckRecorder.ts"
import { Monitor } from "../../services/monitors/MonitorProtocol.ts"
import type { AppConfigShape } from "../../services/platform/AppConfig.ts"
import { freePort as freePortOf } from "../../services/platform/EmbeddedPostgres.ts"
import { bootstrapOrg, request, startAppOnDatabase } from "../support/app.ts"
import { createTestDatabase } from "../support/database.ts"
import { eventually, realSleep } from "../support/wait.ts"

/**
 * Real time, real app: schedules survive a restart of the server on the same database,
 * and two runners sharing the database never both check a monitor's slot. Frequencies
 * are at least 60 s, so the tests make a slot due by setting `next_check_at` in the
 * database (plus a `monitor.changed` event, as a PATCH would) instead of waiting.
 */

// --- a local HTTP target counting requests per path -----------------------------------------

const startTarget = Effect.acquireRelease(
  Effect.callback<{ readonly server: Http.Server; readonly hits: Map<string, number>; readonly port: number }>(
    (resume) => {
      const hits = new Map<string, number>()
      const server = Http.createServer((req, res) => {
        const path = req.url ?? "/"
        hits.set(path, (hits.get(path) ?? 0) + 1)
        res.end("ok")
      })
      server.listen(
        0,
        "127.0.0.1",
        () => resume(Effect.succeed({ server, hits, port: (server.address() as AddressInfo).port }))
      )
    }
  ),
  ({ server }) =>
    Effect.callback<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
).pipe(Effect.map(({ hits, port }) => ({ hits, url: (path: string) => `http://127.0.0.1:${port}${path}` })))

const freePort = Effect.promise(freePortOf)

/** The whole app on an existing database, with its SQL client and a view into its entities. */
const startAppOn = (databaseUrl: string, overrides?: Partial<AppConfigShape>) =>
  Effect.map(startAppOnDatabase(databaseUrl, overrides), (app) => ({
    ...app,
    inspect: (monitorId: string) =>
      Effect.flatMap(Monitor.client, (client) => client(monitorId).Inspect()).pipe(
        Effect.provideContext(app.context),
        Effect.orDie
      )
  }))

interface Beat {
  readonly monitorId: string
  readonly slotAt: string
  readonly attempt: number
  readonly checkedAt: Date
}

const heartbeatsOf = (sql: SqlClient.SqlClient, monitorIds: ReadonlyArray<string>) =>
  sql<Beat>`
    SELECT monitor_id AS "monitorId", slot_at::text AS "slotAt", attempt, checked_at AS "checkedAt"
    FROM heartbeats WHERE monitor_id IN ${sql.in(monitorIds)} ORDER BY checked_at`.pipe(Effect.orDie)

/**
 * Makes the monitors due in `inMs` as a pause and resume through the API would (a
 * re-activated monitor is `pending` and due at once): the row change plus `monitor.changed`.
 */
const makeDue = (sql: SqlClient.SqlClient, orgId: string, monitorIds: ReadonlyArray<string>, inMs = 0) =>
  sql.withTransaction(Effect.gen(function*() {
    yield* sql`
      UPDATE monitors SET status = 'pending', status_since = now(), consecutive_failures = 0,
        next_check_at = date_trunc('milliseconds', now()) + ${inMs} * interval '1 millisecond'
      WHERE id IN ${sql.in(monitorIds)}`
    for (const monitorId of monitorIds) {
      yield* publish({ type: "monitor.changed", orgId, data: { monitorId, orgId, change: "updated" } })
    }
  })).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie)

describe("Monitor schedules across restarts and runners", () => {
  it.live("a monitor keeps being checked after the app restarts, without any API call", () =>
    Effect.gen(function*() {
      const target = yield* startTarget
      const databaseUrl = yield* createTestDatabase
      const first = yield* startAppOn(databaseUrl)
      const { key } = yield* bootstrapOrg(first.baseUrl, { slug: "restart" })
      const created = yield* request(`${first.baseUrl}/api/v1/monitors`, {
        method: "POST",
        token: key,
        body: { name: "restart", url: target.url("/restart"), frequency: 60 }
      })
      expect(created.status).toBe(201)
      const monitorId = created.body.id as string
      yield* eventually("first check", heartbeatsOf(first.sql, [monitorId]), (beats) => beats.length === 1)
      expect((yield* first.inspect(monitorId)).running).toBe(true)

      yield* first.stop
      // While the server is down the next slot comes due (instead of waiting a minute).
      const { sql: adminSql, stop: stopAdmin } = yield* sqlOn(databaseUrl)
      yield* adminSql`UPDATE monitors SET next_check_at = date_trunc('milliseconds', now()) WHERE id = ${monitorId}`
      yield* stopAdmin

      const second = yield* startAppOn(databaseUrl)
      const beats = yield* eventually(
        "check after restart",
        heartbeatsOf(second.sql, [monitorId]),
        (rows) => rows.length === 2,
        { timeoutMs: 20_000 }
      )
      expect(beats[1].slotAt).not.toBe(beats[0].slotAt)
      expect(target.hits.get("/restart")).toBe(2)
      const [row] = yield* second.sql<{ status: string; nextCheckAt: Date }>`
        SELECT status, next_check_at AS "nextCheckAt" FROM monitors WHERE id = ${monitorId}`
      expect(row.status).toBe("up")
      expect(row.nextCheckAt.getTime()).toBeGreaterThan(Date.now())
      expect((yield* second.inspect(monitorId)).running).toBe(true)
      yield* second.stop
    }), 90_000)

  it.live("two runners on one database: every slot is checked once, by one runner", () =>
    Effect.gen(function*() {
      const target = yield* startTarget
      const databaseUrl = yield* createTestDatabase
      const runner = (port: number) => ({
        runnerAddress: Option.some({ host: "127.0.0.1", port }),
        runnerListenAddress: Option.none()
      })
      const a = yield* startAppOn(databaseUrl, runner(yield* freePort))
      const orgId = "org_two_runners"
      yield* a.sql`INSERT INTO organizations (id, slug, name, plan) VALUES (${orgId}, 'two-runners', 'Two', 'free')`
      const count = 40
      const ids = Array.from({ length: count }, (_, i) => `mon_two_${String(i).padStart(3, "0")}`)
      // Bulk insert with the first slots spread over the next 4 seconds.
      yield* a.sql`
        INSERT INTO monitors (id, org_id, name, url, frequency, timeout, retries, next_check_at)
        SELECT 'mon_two_' || lpad(i::text, 3, '0'), ${orgId}, 'm' || i,
          ${target.url("/m/")} || i, 60, 5, 0,
          date_trunc('milliseconds', now()) + (i * 100) * interval '1 millisecond'
        FROM generate_series(0, ${count - 1}) AS i`

      // The second runner joins while the first slots are coming due (A has checked a few of
      // the 40, spread over 4 s): shards move from A to B.
      yield* eventually("first slots checked by runner A", heartbeatsOf(a.sql, ids), (beats) => beats.length >= 5)
      const b = yield* startAppOn(databaseUrl, runner(yield* freePort))
      const firstRound = yield* eventually(
        "first round",
        heartbeatsOf(a.sql, ids),
        (beats) => new Set(beats.map((beat) => beat.monitorId)).size === count
      )
      expect(firstRound.length).toBe(count)

      // Both runners host monitors once the assignment settles.
      const hosts = yield* eventually(
        "monitors on both runners",
        Effect.forEach(ids, (id) => Effect.map(a.inspect(id), (info) => info.runner)),
        (runners) => new Set(runners).size === 2,
        { timeoutMs: 40_000 }
      )
      expect(new Set(hosts).size).toBe(2)

      // Second round: every slot due at once, made due through whichever runner consumes the events.
      yield* makeDue(a.sql, orgId, ids, 500)
      yield* eventually(
        "second round",
        heartbeatsOf(a.sql, ids),
        (beats) => beats.length >= 2 * count
      )
      // Third round while runner B stops: its shards go back to A.
      yield* makeDue(a.sql, orgId, ids, 3000)
      yield* b.stop
      yield* eventually(
        "third round",
        heartbeatsOf(a.sql, ids),
        (beats) => beats.length >= 3 * count,
        { timeoutMs: 45_000 }
      )
      // Every monitor is now hosted, and was checked, by the remaining runner.
      const remaining = (yield* a.inspect(ids[0])).runner
      expect(hosts.some((host) => host !== remaining)).toBe(true)
      yield* eventually(
        "all monitors on the remaining runner",
        Effect.forEach(ids, (id) => a.inspect(id)),
        (infos) => infos.every((info) => info.runner === remaining && info.running)
      )
      yield* realSleep(1000)

      const beats = yield* heartbeatsOf(a.sql, ids)
      const perSlot = new Map<string, number>()
      for (const beat of beats) {
        const key = `${beat.monitorId} ${beat.slotAt} ${beat.attempt}`
        perSlot.set(key, (perSlot.get(key) ?? 0) + 1)
      }
      // One heartbeat per slot (the unique key would reject a second one)…
      expect([...perSlot.values()].every((n) => n === 1)).toBe(true)
      expect(beats.length).toBe(3 * count)
      // …and, what the unique key cannot show, one request per slot at the target.
      for (let i = 0; i < count; i++) {
        const own = beats.filter((beat) => beat.monitorId === ids[i]).length
        expect(target.hits.get(`/m/${i}`) ?? 0).toBe(own)
      }
      yield* a.stop
    }), 150_000)
})

describe("slot claims", () => {
  it.live("concurrent claims of one slot: exactly one caller wins it", () =>
    Effect.gen(function*() {
      const databaseUrl = yield* createTestDatabase
      const app = yield* startAppOn(databaseUrl)
      const recorder = Context.get(app.context, CheckRecorder)
      yield* app.sql`INSERT INTO organizations (id, slug, name, plan) VALUES ('org_cas', 'cas', 'CAS', 'free')`
      // Due in an hour: the entity's own loop sleeps meanwhile.
      const slot = Math.floor(Date.now() / 1000) * 1000 + 3_600_000
      yield* app.sql`
        INSERT INTO monitors (id, org_id, name, url, next_check_at)
        VALUES ('mon_cas', 'org_cas', 'cas', 'http://127.0.0.1:9/', ${new Date(slot)})`
      const claims = yield* Effect.forEach(
        Array.from({ length: 20 }),
        () => recorder.claim({ monitorId: "mon_cas", expected: slot, slotAt: slot, frequency: 60 }),
        { concurrency: "unbounded" }
      )
      expect(claims.filter(Option.isSome).length).toBe(1)
      const [row] = yield* app.sql<{ next: Date }>`SELECT next_check_at AS next FROM monitors WHERE id = 'mon_cas'`
      expect(row.next.getTime()).toBe(slot + 60_000)
      // A stale view of the slot claims nothing.
      expect(
        Option.isNone(yield* recorder.claim({ monitorId: "mon_cas", expected: slot, slotAt: slot, frequency: 60 }))
      )
        .toBe(true)
      yield* app.stop
    }), 60_000)
})

/** A plain SQL client on the database (while no app runs). */
const sqlOn = (databaseUrl: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 }),
      scope
    )
    return { sql: Context.get(context, SqlClient.SqlClient), stop: Scope.close(scope, Exit.void) }
  })
