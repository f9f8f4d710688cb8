import { expect, it, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import type { SqlClient } from "effect/sql"
import { createHash, randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
import { BUCKET, startS3rver } from "../support/s3rver.ts"
import { cloneUrl, createRepo, type GitClient, gitClient, writeFiles } from "./gitClient.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string; readonly sql: SqlClient.SqlClient }>()(
  "test/git/LfsApp"
) {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl, sql: app.sql })))

let counter = 0
const newRepo = (plan: string) =>
  Effect.flatMap(
    TestApp,
    ({ baseUrl }) => createRepo(baseUrl, { slug: `lfs-${process.pid}-${++counter}`, plan, name: "media" })
  )

/** A work tree tracking `*.bin` with git-lfs. */
const lfsWorkTree = (git: GitClient, name: string) =>
  Effect.gen(function*() {
    yield* git.ok(["lfs", "install", "--skip-repo"])
    const dir = git.dir(name)
    yield* git.ok(["init", "-q", dir])
    yield* git.ok(["lfs", "track", "*.bin"], { cwd: dir })
    return dir
  })

const lfsPost = (path: string, key: string, body: unknown) =>
  Effect.flatMap(TestApp, ({ baseUrl }) =>
    request(`${baseUrl}${path}`, {
      method: "POST",
      body,
      headers: {
        authorization: `Basic ${Buffer.from(`x:${key}`).toString("base64")}`,
        accept: "application/vnd.git-lfs+json",
        "content-type": "application/vnd.git-lfs+json"
      }
    }))

layer(TestAppLive, { excludeTestServices: true, timeout: "180 seconds" })("Git LFS", (it) => {
  it.effect("pushes LFS objects and clones them back with identical content", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo("pro")
      const work = yield* lfsWorkTree(git, "work")
      const big = randomBytes(3 * 1024 * 1024)
      const small = Buffer.from("tiny binary\0")
      yield* writeFiles(work, { "assets/big.bin": big, "small.bin": small, "readme.txt": "hi\n" })
      yield* git.ok(["add", "-A"], { cwd: work })
      yield* git.ok(["commit", "-q", "-m", "assets"], { cwd: work })
      yield* git.ok(["push", "-q", repo.url, "main"], { cwd: work })

      // The git objects hold pointers; the content lives in LFS storage.
      const pointer = yield* git.ok(["cat-file", "-p", "HEAD:assets/big.bin"], { cwd: work })
      expect(pointer).toContain("oid sha256:" + createHash("sha256").update(big).digest("hex"))
      const { sql } = yield* TestApp
      const rows = yield* sql<{ size: string }>`SELECT size FROM lfs_objects WHERE repo_id = ${repo.id} ORDER BY size`
        .pipe(Effect.orDie)
      expect(rows.map((row) => Number(row.size))).toEqual([small.length, big.length])

      yield* git.ok(["clone", "-q", repo.url, git.dir("copy")])
      expect(Fs.readFileSync(Path.join(git.dir("copy"), "assets/big.bin")).equals(big)).toBe(true)
      expect(Fs.readFileSync(Path.join(git.dir("copy"), "small.bin")).equals(small)).toBe(true)

      const { baseUrl } = yield* TestApp
      const api = yield* request(`${baseUrl}/api/v1/code/repos/${repo.slug}/media`, { token: repo.key })
      expect(api.body.storageBytes).toBeGreaterThan(big.length + small.length)
    }))

  it.effect("refuses an object over the plan's maximum file size", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo("free")
      const work = yield* lfsWorkTree(git, "work")
      yield* writeFiles(work, { "huge.bin": randomBytes(25 * 1024 * 1024 + 1) })
      yield* git.ok(["add", "-A"], { cwd: work })
      yield* git.ok(["commit", "-q", "-m", "huge"], { cwd: work })
      const pushed = yield* git.run(["push", repo.url, "main"], { cwd: work })
      expect(pushed.code).not.toBe(0)
      expect(pushed.stderr).toContain("exceeds the free plan's maximum file size of 25 MB")
      const { sql } = yield* TestApp
      expect(yield* sql`SELECT oid FROM lfs_objects WHERE repo_id = ${repo.id}`.pipe(Effect.orDie)).toEqual([])
    }))

  it.effect("verifies content before an object counts and answers errors the LFS way", () =>
    Effect.gen(function*() {
      const repo = yield* newRepo("pro")
      const content = Buffer.from("hello lfs")
      const oid = createHash("sha256").update(content).digest("hex")
      const path = `/${repo.slug}/media.git/info/lfs/objects`
      const batch = yield* lfsPost(`${path}/batch`, repo.key, {
        operation: "upload",
        transfers: ["basic"],
        objects: [{ oid, size: content.length }, { oid: "not-an-oid", size: 1 }]
      })
      expect(batch.status).toBe(200)
      expect(batch.headers.get("content-type")).toBe("application/vnd.git-lfs+json")
      const [ok, bad] = batch.body.objects
      expect(ok.actions.upload.href).toMatch(new RegExp(`${path}/${oid}$`))
      expect(bad.error.code).toBe(422)

      const { baseUrl } = yield* TestApp
      const put = (body: Buffer) =>
        Effect.promise(() =>
          fetch(`${baseUrl}${path}/${oid}`, { method: "PUT", headers: ok.actions.upload.header, body }).then((r) =>
            r.status
          )
        )
      expect(yield* put(Buffer.from("something else"))).toBe(422)
      const missing = yield* lfsPost(`${path}/batch`, repo.key, {
        operation: "download",
        objects: [{ oid, size: content.length }]
      })
      expect(missing.body.objects[0].error).toEqual({ code: 404, message: "Object does not exist" })
      expect(yield* put(content)).toBe(200)
      expect((yield* lfsPost(`${path}/verify`, repo.key, { oid, size: content.length })).status).toBe(200)
      const found = yield* lfsPost(`${path}/batch`, repo.key, {
        operation: "download",
        objects: [{ oid, size: content.length }]
      })
      const download = found.body.objects[0].actions.download
      const bytes = yield* Effect.promise(() =>
        fetch(download.href, { headers: download.header }).then(async (r) => Buffer.from(await r.arrayBuffer()))
      )
      expect(bytes.equals(content)).toBe(true)

      const other = yield* newRepo("pro")
      const foreign = yield* lfsPost(`${path}/batch`, other.key, { operation: "download", objects: [{ oid, size: 9 }] })
      expect(foreign.status).toBe(404)
    }))
})

it.effect(
  "hands out presigned S3 URLs when the BlobStore is S3, and verifies before an object counts",
  () =>
    Effect.gen(function*() {
      const s3Dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "canopy-s3rver-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(s3Dir, { recursive: true, force: true })))
      const { port } = yield* startS3rver(s3Dir).pipe(Effect.orDie)
      const endpoint = `http://127.0.0.1:${port}`
      const app = yield* startApp({
        s3: Option.some({
          endpoint,
          bucket: BUCKET,
          region: "us-east-1",
          accessKeyId: "S3RVER",
          secretAccessKey: Redacted.make("S3RVER"),
          forcePathStyle: true
        })
      })
      const org = yield* bootstrapOrg(app.baseUrl, { slug: "lfs-s3", plan: "pro" })
      yield* request(`${app.baseUrl}/api/v1/code/repos`, { method: "POST", token: org.key, body: { name: "media" } })
      const url = cloneUrl(app.baseUrl, "lfs-s3", "media", org.key)
      const content = randomBytes(256 * 1024)
      const oid = createHash("sha256").update(content).digest("hex")

      const auth = { authorization: `Basic ${Buffer.from(`x:${org.key}`).toString("base64")}` }
      const batch = yield* request(`${app.baseUrl}/lfs-s3/media.git/info/lfs/objects/batch`, {
        method: "POST",
        headers: auth,
        body: { operation: "upload", objects: [{ oid, size: content.length }] }
      })
      const upload = batch.body.objects[0].actions.upload
      expect(upload.href.startsWith(`${endpoint}/${BUCKET}/`)).toBe(true)
      expect(upload.href).toContain("X-Amz-Signature=")

      // Through git-lfs: the upload goes to S3 directly, then `verify` makes it count.
      const git = yield* gitClient
      const work = yield* lfsWorkTree(git, "work")
      yield* writeFiles(work, { "data.bin": content })
      yield* git.ok(["add", "-A"], { cwd: work })
      yield* git.ok(["commit", "-q", "-m", "data"], { cwd: work })
      yield* git.ok(["push", "-q", url, "main"], { cwd: work })
      const rows = yield* app.sql<{ oid: string }>`SELECT oid FROM lfs_objects`.pipe(Effect.orDie)
      expect(rows.map((row) => row.oid)).toEqual([oid])
      const download = yield* request(`${app.baseUrl}/lfs-s3/media.git/info/lfs/objects/batch`, {
        method: "POST",
        headers: auth,
        body: { operation: "download", objects: [{ oid, size: content.length }] }
      })
      expect(download.body.objects[0].actions.download.href.startsWith(`${endpoint}/${BUCKET}/`)).toBe(true)
      yield* git.ok(["clone", "-q", url, git.dir("copy")])
      expect(Fs.readFileSync(Path.join(git.dir("copy"), "data.bin")).equals(content)).toBe(true)

      // A presigned upload whose content does not match is refused at verify and removed.
      const forged = createHash("sha256").update("forged").digest("hex")
      const forgedBatch = yield* request(`${app.baseUrl}/lfs-s3/media.git/info/lfs/objects/batch`, {
        method: "POST",
        headers: auth,
        body: { operation: "upload", objects: [{ oid: forged, size: 5 }] }
      })
      yield* Effect.promise(() =>
        fetch(forgedBatch.body.objects[0].actions.upload.href, { method: "PUT", body: "wrong" })
      )
      const verify = yield* request(`${app.baseUrl}/lfs-s3/media.git/info/lfs/objects/verify`, {
        method: "POST",
        headers: auth,
        body: { oid: forged, size: 5 }
      })
      expect(verify.status).toBe(422)
      expect(yield* app.sql`SELECT oid FROM lfs_objects WHERE oid = ${forged}`.pipe(Effect.orDie)).toEqual([])
    }),
  { timeout: 120_000 }
)
