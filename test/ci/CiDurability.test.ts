import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { gitClient } from "../git/gitClient.ts"
import { startAppOnDatabase } from "../support/app.ts"
import { createTestDatabase } from "../support/database.ts"
import { eventually, realSleep } from "../support/wait.ts"
import { ciApi, ciRepo, withEnv as ciEnv } from "./support.ts"

const withEnv = (env: Record<string, string>) => ciEnv({ CI_RUNNER_LOST_SECONDS: "2", ...env })

it.live(
  "the queue is durable: a run queued while no worker runs completes after a restart; a lost runner's job ends `error`",
  () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const git = yield* gitClient
      // A runner without CI work (CI_WORKER=false): the pushed run stays queued.
      const first = yield* startAppOnDatabase(url, undefined, withEnv({ CI_WORKER: "false" }))
      const { ci, head, repo: ciRepoOf } = yield* ciRepo(git, first.baseUrl, `ci-durable-${process.pid}`, {
        config: { installCommand: "true", testCommand: "echo tested" },
        files: { "README.md": "durable\n" }
      })
      yield* eventually("the queued run", ci.runs(), (r) => r.body.count === 1)
      yield* realSleep(1500)
      expect((yield* ci.run(1)).body.run).toMatchObject({ status: "queued", commitSha: head })
      yield* first.stop

      const second = yield* startAppOnDatabase(url, { dataDir: first.config.dataDir }, withEnv({ CI_WORKER: "true" }))
      const restarted = ciApi(second.baseUrl, ciRepoOf)
      const done = yield* restarted.completed(1)
      expect(done.run.conclusion).toBe("success")

      // A runner that died mid-job: its run still says `running`, its heartbeat stopped.
      const sql = second.sql
      const repoId = (yield* sql<{ repo_id: string; org_id: string }>`SELECT repo_id, org_id FROM ci_runs LIMIT 1`)[0]
      yield* sql`
      INSERT INTO ci_runs (id, repo_id, org_id, number, event, branch, commit_sha, status, max_concurrent, runner,
                           heartbeat_at, started_at)
      VALUES ('run_lost', ${repoId.repo_id}, ${repoId.org_id}, 99, 'push', 'main', ${head!}, 'running', 10,
              'runner_gone', now() - interval '1 minute', now() - interval '2 minutes')`
      yield* sql`
      INSERT INTO ci_jobs (id, run_id, position, name, command, status, started_at)
      VALUES ('job_lost_1', 'run_lost', 0, 'install', 'true', 'completed', now() - interval '2 minutes'),
             ('job_lost_2', 'run_lost', 1, 'test', 'npm test', 'running', now() - interval '1 minute'),
             ('job_lost_3', 'run_lost', 2, 'build', 'true', 'queued', NULL)`
      const lost = yield* eventually("the lost run swept", restarted.run(99), (r) => r.body.run?.status === "completed")
      expect(lost.body.run).toMatchObject({ conclusion: "error" })
      expect(lost.body.run.message).toMatch(/Runner lost/)
      expect(lost.body.jobs.map((job: any) => `${job.name}:${job.status}:${job.conclusion}`)).toEqual([
        "install:completed:null",
        "test:completed:error",
        "build:completed:skipped"
      ])
      // The status follows the run's completion.
      yield* eventually("ci/test error", restarted.statuses(head!), (r) => r.body.statuses[0]?.state === "error")
    }).pipe(Effect.scoped),
  { timeout: 120_000 }
)
