import { expect, it } from "@effect/vitest"
import { Context, Effect, Option } from "effect"
import { ShardId, Sharding } from "effect/cluster"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { shardsPerGroup } from "../../layers/Cluster.ts"
import { CiQueue } from "../../services/ci/CiQueueProtocol.ts"
import { freePort } from "../../services/platform/EmbeddedPostgres.ts"
import { shardOf } from "../../src/entities/RunnerAlarms.ts"
import { gitClient } from "../git/gitClient.ts"
import { startAppOnDatabase } from "../support/app.ts"
import { createTestDatabase } from "../support/database.ts"
import { tempDir } from "../support/tempDir.ts"
import { eventually, realSleep } from "../support/wait.ts"
import { ciApi, ciRepo, pushCommit, withEnv } from "./support.ts"

/** A runner of a multi-runner cluster whose `blobs` is the shared object store (as in `test/git/TwoRunners`). */
const runner = (blobs: string, ciWorker: boolean) =>
  Effect.gen(function*() {
    const dataDir = yield* tempDir("canopy-ci-runner-")
    Fs.symlinkSync(blobs, Path.join(dataDir, "blobs"))
    const port = yield* Effect.promise(freePort)
    return {
      overrides: {
        dataDir,
        runnerAddress: Option.some({ host: "127.0.0.1", port }),
        runnerListenAddress: Option.none()
      },
      env: withEnv({ CI_WORKER: String(ciWorker) }),
      address: `127.0.0.1:${port}`
    }
  })

/** How many of the group's shards the app's runner holds. */
const shardsHeld = (context: Context.Context<never>, group: string) => {
  const sharding = Context.get(context as Context.Context<Sharding.Sharding>, Sharding.Sharding)
  let held = 0
  for (let id = 1; id <= shardsPerGroup; id++) if (sharding.hasShardId(ShardId.make(group, id))) held++
  return held
}
const ciShardsHeld = (context: Context.Context<never>) => shardsHeld(context, "ci")

/** Whether the app's runner hosts the organization's CI queue. */
const hostsQueue = (context: Context.Context<never>, orgId: string) => {
  const sharding = Context.get(context as Context.Context<Sharding.Sharding>, Sharding.Sharding)
  return sharding.hasShardId(shardOf(sharding, CiQueue)(orgId))
}

it.live(
  "CI runs only on CI_WORKER runners: queued while the cluster has none, then executed by the worker that joins",
  () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const blobs = yield* tempDir("canopy-ci-blobs-")
      const git = yield* gitClient

      // A cluster of one runner without CI work: its API queues runs, nothing executes them.
      const plain = yield* runner(blobs, false)
      const api = yield* startAppOnDatabase(url, plain.overrides, plain.env)
      const { ci, dir, head, repo } = yield* ciRepo(git, api.baseUrl, `ci-shards-${process.pid}`, {
        config: { installCommand: "true", testCommand: "echo tested" },
        files: { "README.md": "shards\n" }
      })
      yield* eventually("the pushed run", ci.runs(), (r) => r.body.count === 1)
      // Longer than the `ci` sweep's period (2 s) and a heartbeat: a worker would have claimed it by now.
      yield* realSleep(3000)
      expect((yield* ci.run(1)).body.run).toMatchObject({ status: "queued", commitSha: head })
      expect(ciShardsHeld(api.context)).toBe(0)

      // A CI worker joins: it takes every `ci` shard, and the waiting run with it.
      const workerRunner = yield* runner(blobs, true)
      const worker = yield* startAppOnDatabase(url, workerRunner.overrides, workerRunner.env)
      expect((yield* ci.completed(1)).run.conclusion).toBe("success")

      // Runs triggered through the non-worker's API (a push, a manual run) execute on the worker.
      const second = yield* pushCommit(git, dir, { "CHANGES.md": "two\n" })
      const manual = yield* ci.trigger({ branch: "main" })
      expect(manual.status).toBe(201)
      const done = [yield* ci.completed(2), yield* ci.completed(3)]
      expect(done.map((detail) => [detail.run.commitSha, detail.run.conclusion])).toEqual([
        [second, "success"],
        [second, "success"]
      ])
      // Every job ran, and on the worker.
      expect(done.flatMap((detail) => detail.jobs.map((job: any) => job.conclusion))).toEqual([
        "success",
        "success",
        "success",
        "success"
      ])
      const runners = yield* api.sql<{ number: number; runner: string }>`
        SELECT number, runner FROM ci_runs WHERE repo_id = ${repo.id} ORDER BY number`
      expect(runners.map((row) => row.number)).toEqual([1, 2, 3])
      for (const row of runners) expect(row.runner.endsWith(`@${workerRunner.address}`)).toBe(true)
      const log = yield* ci.log(3, done[1].jobs[1].id)
      expect(log.text).toContain("tested")

      // The `ci` shards are the worker's alone; the default group is shared as before.
      yield* eventually(
        "the worker holds every ci shard",
        Effect.sync(() => ciShardsHeld(worker.context)),
        (n) => n === shardsPerGroup
      )
      expect(ciShardsHeld(api.context)).toBe(0)
      yield* eventually(
        "the default shards spread over both runners",
        Effect.sync(() => [shardsHeld(api.context, "default"), shardsHeld(worker.context, "default")]),
        ([a, b]) => a > 0 && b > 0 && a + b === shardsPerGroup
      )
      // Both runners answer for the same queue.
      expect((yield* ciApi(worker.baseUrl, repo).run(3)).body.run.status).toBe("completed")
    }).pipe(Effect.scoped),
  { timeout: 180_000 }
)

it.live(
  "a worker runs at most CI_WORKER_SLOTS runs at once across organizations; the waiting one follows",
  () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const git = yield* gitClient
      const app = yield* startAppOnDatabase(url, undefined, withEnv({ CI_WORKER_SLOTS: "1" }))
      const config = { triggerOnPush: false, installCommand: "true", testCommand: "sleep 2" }
      const files = { "README.md": "slots\n" }
      const first = yield* ciRepo(git, app.baseUrl, `ci-slot-a-${process.pid}`, { config, files, name: "a" })
      const second = yield* ciRepo(git, app.baseUrl, `ci-slot-b-${process.pid}`, { config, files, name: "b" })
      // Enterprise organizations (10 concurrent each): only this runner's single slot holds them back.
      expect((yield* first.ci.trigger({ branch: "main" })).status).toBe(201)
      expect((yield* second.ci.trigger({ branch: "main" })).status).toBe(201)
      let most = 0
      yield* eventually(
        "both runs completed",
        app.sql<{ running: number; completed: number }>`
          SELECT count(*) FILTER (WHERE status = 'running')::int AS running,
                 count(*) FILTER (WHERE status = 'completed')::int AS completed
          FROM ci_runs WHERE repo_id IN (${first.repo.id}, ${second.repo.id})`,
        ([counts]) => {
          most = Math.max(most, counts.running)
          return counts.completed === 2
        },
        { timeoutMs: 90_000, pollMs: 100 }
      )
      expect(most).toBeLessThanOrEqual(1)
      // Whatever the polls saw: the runs' own times never overlap, one slot held them one after the other.
      const [a, b] = yield* app.sql<{ startedAt: Date; completedAt: Date }>`
        SELECT started_at AS "startedAt", completed_at AS "completedAt" FROM ci_runs
        WHERE repo_id IN (${first.repo.id}, ${second.repo.id}) ORDER BY started_at`
      expect(b.startedAt.getTime()).toBeGreaterThanOrEqual(a.completedAt.getTime())
      for (const { ci } of [first, second]) expect((yield* ci.run(1)).body.run.conclusion).toBe("success")
    }).pipe(Effect.scoped),
  { timeout: 180_000 }
)

it.live(
  "two CI workers share the ci shards, and each organization's runs execute on the worker holding its queue",
  () =>
    Effect.gen(function*() {
      const url = yield* createTestDatabase
      const blobs = yield* tempDir("canopy-ci-blobs-")
      const git = yield* gitClient
      const [a, b] = [yield* runner(blobs, true), yield* runner(blobs, true)]
      const first = yield* startAppOnDatabase(url, a.overrides, a.env)
      const second = yield* startAppOnDatabase(url, b.overrides, b.env)
      yield* eventually(
        "the ci shards spread over both workers",
        Effect.sync(() => [ciShardsHeld(first.context), ciShardsHeld(second.context)]),
        ([x, y]) => x > 0 && y > 0 && x + y === shardsPerGroup
      )

      // Organizations until each worker hosts one's queue (each is a coin toss).
      const config = { triggerOnPush: false, installCommand: "true", testCommand: "echo tested" }
      const placed = new Map<string, { ci: ReturnType<typeof ciApi>; repoId: string }>()
      for (let i = 0; placed.size < 2 && i < 20; i++) {
        const made = yield* ciRepo(git, first.baseUrl, `ci-two-${process.pid}-${i}`, {
          config,
          files: { "README.md": `${i}\n` },
          name: `two-${i}`
        })
        const host = hostsQueue(first.context, made.repo.org.id) ? a.address : b.address
        if (!placed.has(host)) placed.set(host, { ci: made.ci, repoId: made.repo.id })
      }
      expect([...placed.keys()].sort()).toEqual([a.address, b.address].sort())

      for (const [host, { ci, repoId }] of placed) {
        expect((yield* ci.trigger({ branch: "main" })).status).toBe(201)
        expect((yield* ci.completed(1)).run.conclusion).toBe("success")
        const [row] = yield* first.sql<{ runner: string }>`SELECT runner FROM ci_runs WHERE repo_id = ${repoId}`
        expect(row.runner.endsWith(`@${host}`)).toBe(true)
      }
    }).pipe(Effect.scoped),
  { timeout: 180_000 }
)
