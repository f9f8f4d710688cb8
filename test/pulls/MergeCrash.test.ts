import { PgClient } from "@effect/sql-pg"
import { expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { gitClient } from "../git/gitClient.ts"
import { createTestDatabase } from "../support/database.ts"
import { startRunner } from "../support/processes.ts"
import { tempDir } from "../support/tempDir.ts"
import { eventually } from "../support/wait.ts"
import { api, pushBranch, repoWithMain } from "./support.ts"

const Sha = Schema.Struct({ sha: Schema.String })
const State = Schema.Struct({ state: Schema.String })
const Pid = Schema.Struct({ pid: Schema.Int })

/**
 * GUIDE §16: the target ref's compare-and-swap and the pull request's merged state commit
 * together. A trigger stalls the merge right where the request is marked merged; the runner
 * is killed there (SIGKILL, its connection gone); after a restart the repository and the
 * request agree, and the merge goes through.
 */
it.effect("a runner killed mid-merge leaves the branch and the pull request consistent", () =>
  Effect.gen(function*() {
    const url = yield* createTestDatabase
    const dataDir = yield* tempDir("canopy-merge-crash-")
    const sql = Context.get(yield* Layer.build(PgClient.layer({ url: Redacted.make(url) })), SqlClient.SqlClient)
    const query = <S extends Schema.Top>(schema: S, statement: Effect.Effect<ReadonlyArray<unknown>, unknown>) =>
      statement.pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(schema))), Effect.orDie)

    const first = yield* startRunner(url, { DATA_DIR: dataDir })
    const git = yield* gitClient
    const { dir, repo } = yield* repoWithMain(git, first.baseUrl, "crash", { "base.txt": "base\n" })
    yield* pushBranch(git, dir, "feature", [{ "f.txt": "f\n" }])
    const mainBefore = (yield* git.ok(["rev-parse", "main"], { cwd: dir })).trim()
    const created = yield* api(first.baseUrl, repo).create({ title: "Feature", sourceBranch: "feature" })
    expect(created.status).toBe(201)
    const number = created.body.number as number

    yield* sql.unsafe(`
      CREATE FUNCTION stall_merge() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.state = 'merged' AND OLD.state <> 'merged' THEN PERFORM pg_sleep(600); END IF;
        RETURN NEW;
      END $$`).pipe(Effect.orDie)
    yield* sql.unsafe(
      `CREATE TRIGGER stall_merge BEFORE UPDATE ON pull_requests FOR EACH ROW EXECUTE FUNCTION stall_merge()`
    ).pipe(Effect.orDie)

    // The merge runs until the trigger stalls it; its answer never comes.
    yield* Effect.forkDetach(Effect.ignore(Effect.tryPromise(() =>
      fetch(api(first.baseUrl, repo).url(`/${number}/merge`), {
        method: "POST",
        headers: { authorization: `Bearer ${repo.key}`, "content-type": "application/json" },
        body: "{}"
      })
    )))
    const [stalled] = yield* eventually(
      "the merge to reach the pull request's update",
      query(
        Pid,
        sql`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'
          AND query LIKE '%pull_requests%'`
      ),
      (rows) =>
        rows.length === 1,
      { timeoutMs: 60_000 }
    )

    // Killed between moving the ref and marking the request merged: its transaction dies with it.
    first.child.kill("SIGKILL")
    yield* Effect.promise(() => new Promise((resolve) => first.child.once("exit", resolve)))
    yield* sql`SELECT pg_terminate_backend(${stalled.pid})`.pipe(Effect.orDie)
    yield* sql.unsafe(`DROP TRIGGER stall_merge ON pull_requests`).pipe(Effect.orDie)

    const mainRef = query(Sha, sql`SELECT sha FROM repo_refs WHERE name = 'refs/heads/main'`)
    const prState = query(State, sql`SELECT state FROM pull_requests WHERE number = ${number}`)
    expect((yield* mainRef)[0].sha).toBe(mainBefore)
    expect((yield* prState)[0].state).toBe("open")

    // After a restart the merge goes through, and both sides say so.
    const second = yield* startRunner(url, { DATA_DIR: dataDir })
    const merged = yield* eventually(
      "the merge after the restart",
      api(second.baseUrl, repo).merge(number),
      (response) => response.status !== 500 && response.status !== 503,
      { timeoutMs: 60_000 }
    )
    expect(merged.status).toBe(200)
    expect((yield* mainRef)[0].sha).toBe(merged.body.sha)
    expect((yield* prState)[0].state).toBe("merged")
  }), { timeout: 240_000 })
