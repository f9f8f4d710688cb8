import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { MessageStorage, RunnerHealth, Runners, RunnerStorage, Sharding, ShardingConfig } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import * as Path from "node:path"
import { Events } from "../../services/events/Events.ts"
import { GitLive } from "../../services/git/GitLive.ts"
import { IssuesLive } from "../../services/issues/IssuesLive.ts"
import { AppConfig } from "../../services/platform/AppConfig.ts"
import { Comments } from "../../services/pulls/Comments.ts"
import { PullRequest } from "../../services/pulls/PullRequestProtocol.ts"
import { PullRequests } from "../../services/pulls/PullRequests.ts"
import { PullsLive } from "../../services/pulls/PullsLive.ts"
import { layerFolder } from "../../services/storage/BlobStoreFolder.ts"
import { PullRequestAlarms } from "../../src/entities/pulls/PullRequestAlarms.ts"
import { PullRequestLive } from "../../src/entities/pulls/PullRequestLive.ts"
import { gitClient } from "../git/gitClient.ts"
import { startAppOnDatabase, testConfig } from "../support/app.ts"
import { createTestDatabase, databaseUnderTestClock } from "../support/database.ts"
import { tempDir } from "../support/tempDir.ts"
import { eventually, eventuallySettled, stays } from "../support/wait.ts"
import { api, pushBranch, repoWithMain } from "./support.ts"

/**
 * Stale pull requests (GUIDE §11): the label and a comment after `warnAfterDays` without
 * activity, closed after `closeAfterDays`; activity removes the label. Under TestClock with
 * the real entity (`TestRunner`) and services, and across a restart of the real app.
 */

const owner = {
  id: "usr_stale",
  username: "stale-owner",
  name: "Stale Owner",
  email: "s@example.com",
  role: "owner" as const
}

/**
 * `TestRunner` with its periodic loops slowed to a day: moving the TestClock by months runs
 * every in-memory loop once per period, which at the default seconds takes minutes.
 */
const DayLoopTestRunner = Sharding.layer.pipe(
  Layer.provideMerge(Runners.layerNoop),
  Layer.provideMerge(MessageStorage.layerMemory),
  Layer.provide([RunnerStorage.layerMemory, RunnerHealth.layerNoop]),
  Layer.provide(ShardingConfig.layer({
    entityMessagePollInterval: "1 day",
    refreshAssignmentsInterval: "1 day",
    shardLockRefreshInterval: "1 day",
    shardLockExpiration: "3 days",
    runnerHealthCheckInterval: "1 day",
    entityMaxIdleTime: "1000 days"
  }))
)

const build = Effect.gen(function*() {
  // Start at the real time: rows written by Postgres defaults must not be in the clock's future.
  yield* TestClock.setTime(Date.now())
  const url = yield* createTestDatabase
  const dataDir = yield* tempDir("canopy-stale-")
  const layer = PullRequestLive({ sweepInterval: "1 hour" }).pipe(
    Layer.provideMerge(PullsLive),
    Layer.provideMerge(IssuesLive),
    Layer.provideMerge(GitLive),
    Layer.provideMerge(Layer.mergeAll(Events.layer, layerFolder(Path.join(dataDir, "blobs")))),
    Layer.provideMerge(DayLoopTestRunner),
    Layer.provideMerge(databaseUnderTestClock(url, 8)),
    Layer.provideMerge(AppConfig.layerWith(testConfig(url, { dataDir })))
  )
  const context = yield* Layer.build(layer)
  const sql = Context.get(context, SqlClient.SqlClient)
  const orgId = "org_stale"
  yield* sql`INSERT INTO organizations (id, slug, name, plan) VALUES (${orgId}, 'stale', 'Stale', 'free')`
  yield* sql`INSERT INTO users (id, username, email) VALUES (${owner.id}, ${owner.username}, ${owner.email})`
  yield* sql`INSERT INTO memberships (org_id, user_id, role) VALUES (${orgId}, ${owner.id}, 'owner')`
  yield* sql`INSERT INTO repositories (id, org_id, name, slug) VALUES ('repo_stale', ${orgId}, 'r', 'r')`
  // Refs only: stale handling never reads objects.
  yield* sql`
    INSERT INTO repo_refs (repo_id, name, sha) VALUES
      ('repo_stale', 'refs/heads/main', ${"a".repeat(40)}), ('repo_stale', 'refs/heads/feature', ${"b".repeat(40)})`
  const pulls = Context.get(context, PullRequests)
  const pr = yield* pulls.create(orgId, "r", owner, { title: "Idle", sourceBranch: "feature" }).pipe(Effect.orDie)
  const client = yield* PullRequest.client.pipe(Effect.provideContext(context))
  const row = sql<{ state: string; labels: ReadonlyArray<string>; comments: number }>`
    SELECT state, labels, (SELECT count(*)::int FROM pr_comments WHERE pr_id = p.id) AS comments
    FROM pull_requests p WHERE id = ${pr.id}`.pipe(Effect.map((rows) => rows[0]), Effect.orDie)
  return {
    sql,
    pr,
    row,
    client: client(pr.id),
    comments: Context.get(context, Comments),
    alarms: Context.get(context, PullRequestAlarms),
    pulls,
    orgId
  }
})

describe("stale pull requests (TestClock)", () => {
  // The repository's setting: warn after 2 days, close after 5 (the defaults, 30 and 90, are
  // exercised across the restart below; moving a TestClock by months runs every periodic
  // loop of the cluster runtime once per period, which takes minutes).
  it.effect(
    "warned with a label and a comment, closed later; activity lifts the label and restarts the count",
    () =>
      Effect.gen(function*() {
        const t = yield* build
        yield* t.sql`UPDATE repositories SET stale_warn_days = 2, stale_close_days = 5 WHERE id = 'repo_stale'`
        // What the sweep does at start: the entity arms its timer (a real-time warm-up first).
        yield* eventually("timer armed", Effect.orDie(t.client.Tick(undefined)), (next) => next !== null)
        yield* TestClock.adjust("47 hours")
        yield* stays(t.row, (r) => r.labels.length === 0 && r.comments === 0)
        yield* TestClock.adjust("1 hour")
        const warned = yield* eventuallySettled("stale warning", t.row, (r) => r.labels.includes("stale"))
        expect(warned).toMatchObject({ state: "open", comments: 1 })

        // A comment is activity: the label goes, and the days count from it.
        const context = yield* Effect.orDie(t.pulls.find(t.orgId, "r", t.pr.number))
        yield* Effect.orDie(t.comments.create(context, owner, { body: "still alive" }))
        expect((yield* t.row).labels).toEqual([])
        // The timer armed for the old close (day 5; the API would also re-arm it at the comment)
        // finds the activity: no close, but a new warning, the comment being over 2 days old.
        yield* TestClock.adjust("3 days")
        const rewarned = yield* eventuallySettled("second warning", t.row, (r) => r.labels.includes("stale"))
        expect(rewarned.state).toBe("open")
        yield* TestClock.adjust("3 days")
        const closed = yield* eventuallySettled("closed", t.row, (r) => r.state === "closed")
        expect(closed.comments).toBe(4)
        const [last] = yield* t.sql<{ body: string }>`
        SELECT body FROM pr_comments WHERE pr_id = ${t.pr.id} ORDER BY created_at DESC LIMIT 1`
        expect(last.body).toMatch(/Closed after 5 days/)
      }),
    120_000
  )

  it.effect(
    "a step that fails (database trouble) is tried again 5 seconds later, not at the next sweep",
    () =>
      Effect.gen(function*() {
        const t = yield* build
        yield* t.sql`UPDATE repositories SET stale_warn_days = 2, stale_close_days = 5 WHERE id = 'repo_stale'`
        const armed = yield* eventually("timer armed", Effect.orDie(t.client.Tick(undefined)), (next) => next !== null)
        // The step's query fails while the column is missing.
        yield* t.sql`ALTER TABLE repositories RENAME COLUMN stale_warn_days TO stale_warn_days_away`
        yield* TestClock.adjust("2 days")
        // The timer fired at the warning time; the failed step armed a retry 5 seconds after it.
        yield* eventually(
          "retry armed",
          Effect.sync(() => t.alarms.get(t.pr.id)),
          (at) => at !== undefined && at - armed! >= 5_000 && at - armed! < 6_000
        )
        expect((yield* t.row).labels).toEqual([])
        yield* t.sql`ALTER TABLE repositories RENAME COLUMN stale_warn_days_away TO stale_warn_days`
        yield* TestClock.adjust("5 seconds")
        const warned = yield* eventuallySettled("stale warning", t.row, (r) => r.labels.includes("stale"))
        expect(warned).toMatchObject({ state: "open", comments: 1 })
      }),
    120_000
  )
})

const sqlOn = (databaseUrl: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 }),
      scope
    )
    return { sql: Context.get(context, SqlClient.SqlClient), stop: Scope.close(scope, Exit.void) }
  })

describe("stale pull requests across a restart", () => {
  it.live(
    "a restarted app warns and closes pull requests that went stale while it was down",
    () =>
      Effect.gen(function*() {
        const git = yield* gitClient
        const databaseUrl = yield* createTestDatabase
        const first = yield* startAppOnDatabase(databaseUrl)
        const { dir, repo } = yield* repoWithMain(git, first.baseUrl, "stale-restart")
        yield* pushBranch(git, dir, "feature", [{ "f.txt": "f\n" }])
        yield* pushBranch(git, dir, "other", [{ "o.txt": "o\n" }])
        const pulls = api(first.baseUrl, repo)
        expect((yield* pulls.create({ title: "to warn", sourceBranch: "feature" })).status).toBe(201)
        expect((yield* pulls.create({ title: "to close", sourceBranch: "other" })).status).toBe(201)
        yield* pulls.settled(1)
        yield* pulls.settled(2)
        yield* first.stop

        // While the server is down, time passes: 31 days for #1, 91 for #2.
        const admin = yield* sqlOn(databaseUrl)
        yield* admin.sql`UPDATE pull_requests SET last_activity_at = now() - interval '31 days' WHERE number = 1`
        yield* admin.sql`UPDATE pull_requests SET last_activity_at = now() - interval '91 days' WHERE number = 2`
        yield* admin.stop

        const second = yield* startAppOnDatabase(databaseUrl)
        const again = api(second.baseUrl, repo)
        const warned = yield* eventually(
          "warned after restart",
          again.get(1),
          (r) => r.body.labels?.includes("stale"),
          {
            timeoutMs: 30_000
          }
        )
        expect(warned.body.state).toBe("open")
        const closed = yield* eventually("closed after restart", again.get(2), (r) => r.body.state === "closed", {
          timeoutMs: 30_000
        })
        expect(closed.body.closedAt).not.toBeNull()
        const comments = yield* second.sql<{ body: string }>`
        SELECT c.body FROM pr_comments c JOIN pull_requests p ON p.id = c.pr_id WHERE p.number = 1`
        expect(
          comments.map((c) => c.body).join("\n")
        ).toMatch(/marked stale/)
        yield* second.stop
      }),
    120_000
  )
})
