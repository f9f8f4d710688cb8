import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import { CiCaches } from "../../services/ci/CiCaches.ts"
import { BlobStore } from "../../services/storage/BlobStore.ts"
import { gitClient } from "../git/gitClient.ts"
import { request, startApp } from "../support/app.ts"
import { ciRepo, nodeProject, passingTest, pushCommit } from "./support.ts"

class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly sql: SqlClient.SqlClient
  readonly blobs: BlobStore["Service"]
  readonly caches: CiCaches["Service"]
}>()("test/ci/CachesApp") {}
const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(startApp(), (app) => ({
    baseUrl: app.baseUrl,
    sql: app.sql,
    blobs: Context.get(app.context, BlobStore),
    caches: Context.get(app.context, CiCaches)
  }))
)

/**
 * The install writes a marker (and 2 MB of incompressible bytes) into `node_modules` only when
 * the marker is absent, and says which case it saw: a restored cache is visible in its log.
 */
const install = [
  "if [ -e node_modules/.cache-marker ]; then echo \"marker restored: $(cat node_modules/.cache-marker)\"",
  "else mkdir -p node_modules && echo \"from $SERVICE_RUN_ID\" > node_modules/.cache-marker",
  "  head -c 2000000 /dev/urandom > node_modules/blob.bin && echo marker created; fi"
].join("\n")

const lockfile = (version: string) =>
  JSON.stringify({
    name: "fixture",
    version,
    lockfileVersion: 3,
    requires: true,
    packages: { "": { name: "fixture", version } }
  })

layer(TestAppLive, { excludeTestServices: true, timeout: "240 seconds" })("CI caches", (it) => {
  it.effect(
    "a cache is saved after install, restored by the next run, and a changed lockfile is a new key",
    () =>
      Effect.gen(function*() {
        const { baseUrl, blobs, caches, sql } = yield* TestApp
        const git = yield* gitClient
        const { ci, dir, repo } = yield* ciRepo(git, baseUrl, `ci-cache-${process.pid}`, {
          config: { installCommand: install, testCommand: "true" },
          files: nodeProject({ "a.test.js": passingTest })
        })
        const installLog = (number: number) =>
          Effect.gen(function*() {
            const detail = yield* ci.completed(number)
            expect(detail.run.conclusion).toBe("success")
            return (yield* ci.log(number, detail.jobs.find((job: any) => job.name === "install").id)).text
          })

        const first = yield* installLog(1)
        expect(first).toMatch(/\[canopy\] cache miss: key nodejs-[0-9a-f]{40} \(package-lock\.json\)/)
        expect(first).toContain("marker created")
        expect(first).toMatch(/\[canopy\] cache saved: key nodejs-[0-9a-f]{40} \(\d+\.\d MiB\)/)
        const key = /cache saved: key (\S+)/.exec(first)![1]

        // The next run of the same commit starts from the saved folders.
        expect((yield* ci.trigger({ branch: "main" })).status).toBe(201)
        const second = yield* installLog(2)
        expect(second).toContain(`[canopy] cache restored: key ${key}`)
        expect(second).toMatch(/marker restored: from run_/)
        expect(second).not.toContain("cache saved")

        // A changed lockfile: another key, a miss, a second entry.
        yield* pushCommit(git, dir, { "package-lock.json": lockfile("1.0.1") })
        const third = yield* installLog(3)
        expect(third).toContain("cache miss")
        expect(third).not.toContain(key)
        expect(third).toContain("marker created")
        expect(third).toContain("cache saved")

        const rows = yield* sql<{ key: string; blob_key: string; size: string }>`
        SELECT key, blob_key, size::text FROM ci_caches WHERE repo_id = ${repo.id} ORDER BY created_at`
        expect(rows.map((row) => row.key)).toHaveLength(2)
        expect(rows[0].key).toBe(key)
        const stored = yield* blobs.list(`repos/${repo.id}/ci-cache/`)
        expect(stored.map((blob) => blob.key).sort()).toEqual(rows.map((row) => row.blob_key).sort())

        // Caches do not count against storage: 2 × ~2 MB archived, far less used.
        const cached = stored.reduce((sum, blob) => sum + blob.size, 0)
        expect(cached).toBeGreaterThan(3_900_000)
        const usage = yield* request(`${baseUrl}/api/v1/code/storage`, { token: repo.key })
        expect(usage.status).toBe(200)
        expect(usage.body.usedBytes).toBeLessThan(1_000_000)

        // Expiry: an entry unused for 8 days goes (row and blob), the other stays; a restore keeps it alive.
        yield* sql`UPDATE ci_caches SET last_used_at = now() - interval '8 days' WHERE key = ${key}`
        expect(yield* caches.expire(Date.now())).toBe(1)
        const left = yield* sql<{ key: string }>`SELECT key FROM ci_caches WHERE repo_id = ${repo.id}`
        expect(left.map((row) => row.key)).toEqual([rows[1].key])
        expect((yield* blobs.list(`repos/${repo.id}/ci-cache/`)).map((blob) => blob.key)).toEqual([rows[1].blob_key])
        yield* sql`UPDATE ci_caches SET last_used_at = now() - interval '6 days'`
        expect(yield* caches.expire(Date.now())).toBe(0)
      }).pipe(Effect.scoped),
    200_000
  )
})
