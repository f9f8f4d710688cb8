import { expect, layer } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer } from "effect"
import type { Sharding } from "effect/cluster"
import type { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Compaction } from "../../services/git/Compaction.ts"
import { Repository } from "../../services/git/RepositoryProtocol.ts"
import { BlobStore } from "../../services/storage/BlobStore.ts"
import { request, startApp } from "../support/app.ts"
import { commit, createRepo, type GitClient, gitClient } from "./gitClient.ts"

/**
 * A cache too small for two repositories: each use evicts the other (idle) one. Given to
 * this app alone (test files share a worker's process and its default config provider).
 */
const tinyCache = Context.make(
  ConfigProvider.ConfigProvider,
  ConfigProvider.fromEnv({ env: { ...(process.env as Record<string, string>), GIT_CACHE_MAX_BYTES: "1" } })
)

class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly dataDir: string
  readonly context: Context.Context<Sharding.Sharding | SqlClient.SqlClient | BlobStore | Compaction>
}>()("test/git/RepositoryEntityApp") {}
const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(
    startApp(undefined, tinyCache),
    (app) => ({ baseUrl: app.baseUrl, dataDir: app.config.dataDir, context: app.context as any })
  )
)

let counter = 0
const newRepo = (name: string) =>
  Effect.flatMap(TestApp, ({ baseUrl }) => createRepo(baseUrl, { slug: `ent-${process.pid}-${++counter}`, name }))

const pushCommits = (git: GitClient, dir: string, url: string, count: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < count; i++) {
      yield* commit(git, dir, { [`file-${i}.txt`]: `content ${i}\n`.repeat(50) }, `commit ${i}`)
      yield* git.ok(["push", "-q", url, "main"], { cwd: dir })
    }
  })

const inApp = <A, E>(effect: Effect.Effect<A, E, Sharding.Sharding | SqlClient.SqlClient | BlobStore | Compaction>) =>
  Effect.flatMap(TestApp, ({ context }) => Effect.provide(effect, context))

layer(TestAppLive, { excludeTestServices: true, timeout: "180 seconds" })("Repository entity", (it) => {
  it.effect("compacts piled-up packs into one, keeps every object, and keeps storage figures current", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo("compact-me")
      const work = git.dir("work")
      yield* git.ok(["init", "-q", work])
      yield* pushCommits(git, work, repo.url, 4)
      const blobs = yield* inApp(BlobStore)
      const before = yield* inApp(blobs.list(`repos/${repo.id}/packs/`))
      expect(before).toHaveLength(8)

      const client = yield* inApp(Repository.client)
      const result = yield* inApp(client(repo.id).Compact({ minPacks: 3 }))
      expect(result).toEqual({ compacted: true, packsBefore: 4, packsAfter: 1 })
      const after = yield* inApp(blobs.list(`repos/${repo.id}/packs/`))
      expect(after).toHaveLength(2)
      // Below the threshold now: nothing to do.
      expect((yield* inApp(client(repo.id).Compact({ minPacks: 3 }))).compacted).toBe(false)

      yield* git.ok(["clone", "-q", repo.url, git.dir("copy")])
      expect(yield* git.ok(["rev-list", "--count", "HEAD"], { cwd: git.dir("copy") })).toBe("4\n")
      yield* git.ok(["fsck", "--no-progress"], { cwd: git.dir("copy") })

      const stored = after.reduce((sum, blob) => sum + blob.size, 0)
      const { baseUrl } = yield* TestApp
      const api = yield* request(`${baseUrl}/api/v1/code/repos/${repo.slug}/compact-me`, { token: repo.key })
      expect(api.body.storageBytes).toBe(stored)
      expect(yield* inApp(client(repo.id).RecountStorage())).toEqual({ packBytes: stored, lfsBytes: 0 })
      const compaction = yield* inApp(Compaction)
      expect(yield* inApp(compaction.organizationUsage(repo.org.id))).toEqual({ packBytes: stored, lfsBytes: 0 })
    }))

  it.effect("keeps the runner's cache within its byte bound, fetching evicted packs again on demand", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const first = yield* newRepo("first")
      const second = yield* newRepo("second")
      for (const repo of [first, second]) {
        const dir = git.dir(`work-${repo.slug}`)
        yield* git.ok(["init", "-q", dir])
        yield* pushCommits(git, dir, repo.url, 1)
      }
      const { dataDir } = yield* TestApp
      const cached = (id: string) => Fs.existsSync(Path.join(dataDir, "git-cache", id))
      yield* git.ok(["clone", "-q", first.url, git.dir("first-copy")])
      expect(cached(first.id)).toBe(true)
      expect(cached(second.id)).toBe(false)
      yield* git.ok(["clone", "-q", second.url, git.dir("second-copy")])
      expect(cached(first.id)).toBe(false)
      yield* git.ok(["clone", "-q", first.url, git.dir("first-again")])
      expect(yield* git.ok(["log", "--format=%s"], { cwd: git.dir("first-again") })).toBe("commit 0\n")
      expect(cached(second.id)).toBe(false)
      // The entity warms the hosting runner's cache on request.
      const client = yield* inApp(Repository.client)
      yield* inApp(client(second.id).WarmUp())
      expect(cached(second.id)).toBe(true)
    }))
})
