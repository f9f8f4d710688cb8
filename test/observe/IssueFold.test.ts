import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import { foldIssueCounters } from "../../services/observe/IssueRows.ts"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { errorEvent, ingest } from "./support.ts"

/**
 * Buffered issue counters: a commit appends the deltas of issues that exist to
 * `observe_issue_pending`; folds apply them (the entity about once a second, and every read
 * and status change first). Some tests write a buffered row themselves, as a commit (or a
 * crash right after one) leaves it, to hold one in place while something else happens.
 */
class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly sql: SqlClient.SqlClient
}>()("test/observe/IssueFold/TestApp") {}

const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl, sql: app.sql })))

let orgCounter = 0
const newOrg = Effect.gen(function*() {
  const { baseUrl } = yield* TestApp
  return yield* bootstrapOrg(baseUrl, { slug: `fold-${process.pid}-${++orgCounter}`, plan: "enterprise" })
})

const api = (token: string, path: string, init?: { method?: string; body?: unknown }) =>
  Effect.flatMap(TestApp, ({ baseUrl }) => request(`${baseUrl}/api/v1/observe${path}`, { token, ...init }))

const send = (token: string, body: unknown) =>
  Effect.flatMap(TestApp, ({ baseUrl }) => ingest(baseUrl, body, { token }))

/** The issue row as stored, without folding (the API folds before it reads). */
const storedIssue = (id: string) =>
  Effect.flatMap(TestApp, ({ sql }) =>
    sql<{ count: number; users: number; status: string }>`
      SELECT count::int, users::int, status FROM observe_issues WHERE id = ${id}`.pipe(
      Effect.map((rows) => rows[0]),
      Effect.orDie
    ))

const pendingRows = (orgId: string) =>
  Effect.flatMap(
    TestApp,
    ({ sql }) =>
      sql<{ n: number }>`SELECT count(*)::int AS n FROM observe_issue_pending WHERE org_id = ${orgId}`.pipe(
        Effect.map((rows) => rows[0].n),
        Effect.orDie
      )
  )

/** A buffered row as a commit writes it: `count` more events of `issueId`, at `release`, with `users` new users. */
const buffer = (orgId: string, issueId: string, options: { count: number; release: string; users: number }) =>
  Effect.flatMap(TestApp, ({ sql }) =>
    sql`
      INSERT INTO observe_issue_pending (org_id, deltas, users, missing)
      VALUES (${orgId}, ${
      JSON.stringify([{
        id: issueId,
        count: options.count,
        level: "warning",
        last: Date.now(),
        firstRelease: options.release,
        lastRelease: options.release,
        releases: [options.release],
        environments: ["production"]
      }])
    }::json, ${Array.from({ length: options.users }, () => issueId)}, '{}')`.pipe(Effect.orDie))

/** A new organization with one issue (one event, release 1.0.0); its id. */
const orgWithIssue = Effect.gen(function*() {
  const org = yield* newOrg
  expect((yield* send(org.key, errorEvent({ release: "1.0.0", user: "u1" }))).status).toBe(202)
  const issueId: string = (yield* api(org.key, "/issues")).body.issues[0].id
  return { ...org, issueId }
})

layer(TestAppLive, { excludeTestServices: true, timeout: 120_000 })("buffered issue counters", (it) => {
  it.effect("the ingest entity folds buffered counters by itself, with no read", () =>
    Effect.gen(function*() {
      const { key, org, issueId } = yield* orgWithIssue
      // The issue exists now, so these two commits buffer its counters instead of updating its row.
      yield* send(key, errorEvent({ release: "1.1.0", user: "u2" }))
      yield* send(key, { events: [errorEvent({ user: "u2" }), errorEvent({ user: "u3" })] })
      const folded = yield* eventually("issue row folded by the entity", storedIssue(issueId), (row) => row.count === 4)
      expect(folded.users).toBe(3)
      expect(yield* pendingRows(org.id)).toBe(0)
      expect((yield* api(key, `/issues/${issueId}`)).body).toMatchObject({
        count: 4,
        users: 3,
        firstRelease: "1.0.0",
        lastRelease: "1.1.0"
      })
    }))

  it.effect("rows a crash left behind are folded when the organization's ingest entity starts, with no read", () =>
    Effect.gen(function*() {
      const { sql } = yield* TestApp
      const org = yield* newOrg
      // An issue and a buffered row as a runner that died after a commit leaves them; no entity runs yet.
      const issueId = `grp_crash${orgCounter}`
      yield* sql`
        INSERT INTO observe_issues (id, org_id, fingerprint, title, level, count, first_seen, last_seen)
        VALUES (${issueId}, ${org.org.id}, ${`fp-${issueId}`}, 'TypeError: left behind', 'error', 1, now(), now())`
        .pipe(Effect.orDie)
      yield* buffer(org.org.id, issueId, { count: 4, release: "3.0.0", users: 1 })
      // Any event starts the entity (a new issue: its commit does not wake the folder).
      expect((yield* send(org.key, errorEvent({ type: "Unrelated" }))).status).toBe(202)
      const folded = yield* eventually("buffered row folded at start", storedIssue(issueId), (row) => row.count === 5)
      expect(folded.users).toBe(1)
    }))

  it.effect("a read folds what is buffered first: every field exact, and each buffered row applied once", () =>
    Effect.gen(function*() {
      const { key, org, issueId } = yield* orgWithIssue
      yield* buffer(org.id, issueId, { count: 3, release: "2.0.0", users: 2 })
      yield* buffer(org.id, issueId, { count: 2, release: "2.1.0", users: 0 })
      const issue = (yield* api(key, `/issues/${issueId}`)).body
      expect(issue).toMatchObject({ count: 6, users: 3, level: "warning", firstRelease: "1.0.0", lastRelease: "2.1.0" })
      expect(issue.releases.toSorted()).toEqual(["1.0.0", "2.0.0", "2.1.0"])
      expect(issue.environments).toEqual(["production"])
      expect(yield* pendingRows(org.id)).toBe(0)
      // Read again: nothing is applied twice.
      expect((yield* api(key, "/issues")).body.issues[0]).toMatchObject({ id: issueId, count: 6, users: 3 })
    }))

  it.effect("concurrent folds apply each buffered row once", () =>
    Effect.gen(function*() {
      const { sql } = yield* TestApp
      const { org, issueId } = yield* orgWithIssue
      for (let i = 0; i < 20; i++) yield* buffer(org.id, issueId, { count: 1, release: "1.0.0", users: 0 })
      yield* Effect.all(Array.from({ length: 4 }, () => foldIssueCounters(sql, org.id)), { concurrency: "unbounded" })
        .pipe(Effect.orDie)
      expect((yield* storedIssue(issueId)).count).toBe(21)
      expect(yield* pendingRows(org.id)).toBe(0)
    }))

  it.effect("events buffered before a resolve are counted by it and do not reopen the issue; a later one does", () =>
    Effect.gen(function*() {
      const { sql } = yield* TestApp
      const { key, org, issueId } = yield* orgWithIssue
      yield* buffer(org.id, issueId, { count: 2, release: "1.0.1", users: 0 })
      const resolved = yield* api(key, `/issues/${issueId}`, { method: "PATCH", body: { status: "resolved" } })
      expect(resolved.body).toMatchObject({ status: "resolved", count: 3, lastRelease: "1.0.1" })
      expect((yield* api(key, `/issues/${issueId}`)).body).toMatchObject({ status: "resolved", count: 3 })

      // A commit after the resolve reaches the issue through the buffer and reopens it at its fold.
      expect((yield* send(key, errorEvent({ release: "1.1.0" }))).status).toBe(202)
      expect((yield* api(key, `/issues/${issueId}`)).body).toMatchObject({
        status: "unresolved",
        resolvedAt: null,
        count: 4
      })
      const types = yield* sql<{ type: string }>`
        SELECT type FROM domain_events WHERE org_id = ${org.id} AND type LIKE 'observe.issue.%' ORDER BY id`
        .pipe(Effect.orDie)
      expect(types.map((row) => row.type)).toEqual([
        "observe.issue.created",
        "observe.issue.updated",
        "observe.issue.regressed"
      ])
    }))

  it.effect("a buffered row of an organization that is deleted goes with it", () =>
    Effect.gen(function*() {
      const { sql } = yield* TestApp
      const { org, issueId } = yield* orgWithIssue
      yield* buffer(org.id, issueId, { count: 1, release: "1.0.0", users: 0 })
      yield* sql`DELETE FROM organizations WHERE id = ${org.id}`.pipe(Effect.orDie)
      expect(yield* pendingRows(org.id)).toBe(0)
    }))
})
