import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { createHmac, randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { AiSettings } from "../../services/ai/AiSettings.ts"
import { CiSettings } from "../../services/ci/CiSettings.ts"
import { Repositories } from "../../services/git/Repositories.ts"
import { RepositoryLifecycle } from "../../services/git/RepositoryLifecycle.ts"
import { api, pushBranch, repoWithMain } from "../pulls/support.ts"
import { adminToken, request, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { startReceiver } from "../webhooks/receiver.ts"
import { cloneUrl, commit, createRepo, gitClient, pushedWorkTree } from "./gitClient.ts"

class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly sql: SqlClient.SqlClient
  readonly blobs: string
  readonly lifecycle: RepositoryLifecycle["Service"]
  readonly ciSettings: CiSettings["Service"]
  readonly aiSettings: AiSettings["Service"]
  readonly repositories: Repositories["Service"]
}>()("test/git/Lifecycle") {}
const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(startApp(), (app) => ({
    baseUrl: app.baseUrl,
    sql: app.sql,
    blobs: Path.join(app.config.dataDir, "blobs"),
    lifecycle: Context.get(app.context, RepositoryLifecycle),
    ciSettings: Context.get(app.context, CiSettings),
    aiSettings: Context.get(app.context, AiSettings),
    repositories: Context.get(app.context, Repositories)
  }))
)

let counter = 0
const slug = (name: string) => `${name}-${process.pid}-${++counter}`

/** Every blob key under the local BlobStore folder. */
const blobKeys = (root: string): Array<string> =>
  Fs.existsSync(root)
    ? (Fs.readdirSync(root, { recursive: true, withFileTypes: true }) as Array<Fs.Dirent>)
      .filter((entry) => entry.isFile() && !entry.name.startsWith(".canopy-"))
      .map((entry) => Path.relative(root, Path.join(entry.parentPath, entry.name)))
      .filter((key) => !key.split(Path.sep).some((part) => part.startsWith(".canopy-")))
    : []

const code = (baseUrl: string, tail: string) => `${baseUrl}/api/v1/code${tail}`

layer(TestAppLive, { excludeTestServices: true, timeout: "240 seconds" })("Repository lifecycle", (it) => {
  it.effect("archive: pushes refused while clones work, open pull requests closed with a comment and the event", () =>
    Effect.gen(function*() {
      const { baseUrl, sql } = yield* TestApp
      const git = yield* gitClient
      const { dir, repo } = yield* repoWithMain(git, baseUrl, slug("archive"))
      yield* pushBranch(git, dir, "feature", [{ "f.txt": "f\n" }])
      const pulls = api(baseUrl, repo)
      const opened = yield* pulls.create({ title: "Feature", sourceBranch: "feature" })
      expect(opened.status).toBe(201)

      const archived = yield* request(code(baseUrl, `/repos/${repo.slug}/${repo.name}`), {
        method: "PATCH",
        token: repo.key,
        body: { archived: true }
      })
      expect(archived.status).toBe(200)
      expect(archived.body.archived).toBe(true)

      const pr = yield* pulls.get(opened.body.number)
      expect(pr.body.state).toBe("closed")
      const comments = yield* request(pulls.url(`/${opened.body.number}/comments`), { token: repo.key })
      expect(comments.body.comments.map((c: { body: string }) => c.body).join("\n")).toContain("archived")
      const events = yield* sql`
        SELECT count(*)::int AS n FROM domain_events WHERE type = 'pull_request.closed'
          AND data->'pullRequest'->>'id' = ${opened.body.id}`.pipe(Effect.orDie)
      expect((events[0] as { n: number }).n).toBe(1)

      // Read-only: a push is refused (git's `ng`), new pull requests, comments and merges answer 409.
      yield* commit(git, dir, { "b.txt": "b\n" }, "b")
      const push = yield* git.run(["push", "origin", "feature"], { cwd: dir })
      expect(push.code).not.toBe(0)
      expect(push.stderr).toContain("archived")
      const refused = yield* pulls.create({ title: "Again", sourceBranch: "feature" })
      expect(refused.status).toBe(409)
      expect(refused.body.message).toContain("archived")
      expect((yield* pulls.comment(opened.body.number, { body: "hi" })).status).toBe(409)
      const reopen = yield* pulls.patch(opened.body.number, { state: "open" })
      expect(reopen.status).toBe(409)
      // CI runs and AI reviews are refused for the archive (before any other reason).
      const run = yield* request(code(baseUrl, `/repos/${repo.slug}/${repo.name}/ci/runs`), {
        method: "POST",
        token: repo.key,
        body: { branch: "main" }
      })
      expect(run.status).toBe(409)
      expect(run.body.message).toContain("archived")
      const review = yield* request(
        code(baseUrl, `/repos/${repo.slug}/${repo.name}/pulls/${opened.body.number}/ai-review`),
        {
          method: "POST",
          token: repo.key
        }
      )
      expect(review.status).toBe(409)
      expect(review.body.message).toContain("archived")
      // Fetches continue.
      yield* git.ok(["clone", "-q", repo.url, git.dir("archived-clone")])

      const unarchived = yield* request(code(baseUrl, `/repos/${repo.slug}/${repo.name}`), {
        method: "PATCH",
        token: repo.key,
        body: { archived: false }
      })
      expect(unarchived.body.archived).toBe(false)
      yield* git.ok(["push", "-q", "origin", "feature"], { cwd: dir })
    }))

  it.effect("trash: delete frees the name; restore (under a new name when taken) clones byte for byte", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const repo = yield* createRepo(baseUrl, { slug: slug("trash") })
      const binary = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256))
      const work = git.dir("work")
      yield* git.ok(["init", "-q", work])
      const head = yield* commit(git, work, { "data.bin": binary, "a.txt": "a\n" }, "data")
      yield* git.ok(["push", "-q", repo.url, "main"], { cwd: work })
      const repoUrl = code(baseUrl, `/repos/${repo.slug}/${repo.name}`)
      const storage = Effect.map(request(code(baseUrl, "/storage"), { token: repo.key }), (r) => r.body.usedBytes)
      const stored = yield* storage
      expect(stored).toBeGreaterThan(0)

      expect((yield* request(repoUrl, { method: "DELETE", token: repo.key })).status).toBe(204)
      // Storage stops counting at the deletion.
      expect(yield* storage).toBe(0)
      expect((yield* request(repoUrl, { token: repo.key })).status).toBe(404)
      expect((yield* git.run(["ls-remote", repo.url])).code).not.toBe(0)
      const listed = yield* request(code(baseUrl, "/repos"), { token: repo.key })
      expect(listed.body.repositories).toEqual([])

      const trash = yield* request(code(baseUrl, "/trash"), { token: repo.key })
      expect(trash.status).toBe(200)
      expect(trash.body.count).toBe(1)
      const entry = trash.body.repositories[0]
      expect(entry.id).toBe(repo.id)
      expect(Date.parse(entry.purgeAt) - Date.parse(entry.deletedAt)).toBe(30 * 24 * 60 * 60 * 1000)

      // The name is free: a new repository takes it, so restoring under it is a 409.
      const again = yield* request(code(baseUrl, "/repos"), { method: "POST", token: repo.key, body: { name: "r" } })
      expect(again.status).toBe(201)
      const clash = yield* request(code(baseUrl, `/trash/${repo.id}/restore`), {
        method: "POST",
        token: repo.key,
        body: {}
      })
      expect(clash.status).toBe(409)
      const restored = yield* request(code(baseUrl, `/trash/${repo.id}/restore`), {
        method: "POST",
        token: repo.key,
        body: { name: "r-restored" }
      })
      expect(restored.status).toBe(200)
      expect(restored.body).toMatchObject({ id: repo.id, name: "r-restored" })

      const clone = git.dir("restored")
      yield* git.ok(["clone", "-q", cloneUrl(baseUrl, repo.slug, "r-restored", repo.key), clone])
      expect((yield* git.ok(["rev-parse", "HEAD"], { cwd: clone })).trim()).toBe(head)
      expect(Fs.readFileSync(Path.join(clone, "data.bin")).equals(binary)).toBe(true)
      expect((yield* request(code(baseUrl, "/trash"), { token: repo.key })).body.count).toBe(0)
      expect(yield* storage).toBe(stored)
    }))

  it.effect("purge leaves no blob of the repository and every blob of the others", () =>
    Effect.gen(function*() {
      const { baseUrl, blobs, sql } = yield* TestApp
      const git = yield* gitClient
      const doomed = yield* createRepo(baseUrl, { slug: slug("purge") })
      yield* pushedWorkTree(git, doomed.url, "doomed")
      const kept = yield* request(code(baseUrl, "/repos"), {
        method: "POST",
        token: doomed.key,
        body: { name: "kept" }
      })
      yield* pushedWorkTree(git, cloneUrl(baseUrl, doomed.slug, "kept", doomed.key), "kept")
      const before = blobKeys(blobs)
      const ofDoomed = before.filter((key) => key.startsWith(`repos/${doomed.id}/`))
      const ofOthers = before.filter((key) => !key.startsWith(`repos/${doomed.id}/`))
      expect(ofDoomed.length).toBeGreaterThan(0)
      expect(ofOthers.some((key) => key.startsWith(`repos/${kept.body.id}/`))).toBe(true)

      // Only a trashed repository can be purged.
      expect((yield* request(code(baseUrl, `/trash/${doomed.id}`), { method: "DELETE", token: doomed.key })).status)
        .toBe(404)
      yield* request(code(baseUrl, `/repos/${doomed.slug}/r`), { method: "DELETE", token: doomed.key })
      const purged = yield* request(code(baseUrl, `/trash/${doomed.id}`), { method: "DELETE", token: doomed.key })
      expect(purged.status).toBe(204)

      const after = blobKeys(blobs)
      expect(after.filter((key) => key.startsWith(`repos/${doomed.id}/`))).toEqual([])
      for (const key of ofOthers) expect(after).toContain(key)
      const rows = yield* sql`SELECT id FROM repositories WHERE id = ${doomed.id}`.pipe(Effect.orDie)
      expect(rows).toEqual([])
      yield* git.ok(["clone", "-q", cloneUrl(baseUrl, doomed.slug, "kept", doomed.key), git.dir("kept-clone")])
    }))

  it.effect("storage: reported per repository; at 100% pushes, merges and suggestion commits are refused, fetches continue", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const { dir, repo } = yield* repoWithMain(git, baseUrl, slug("storage"))
      yield* pushBranch(git, dir, "feature", [{ "f.txt": "f\n" }])
      const pulls = api(baseUrl, repo)
      const opened = yield* pulls.create({ title: "Feature", sourceBranch: "feature" })
      yield* pulls.settled(opened.body.number)
      const suggested = yield* pulls.comment(opened.body.number, {
        body: "```suggestion\nF\n```",
        path: "f.txt",
        line: 1
      })
      expect(suggested.status).toBe(201)

      const usage = yield* request(code(baseUrl, "/storage"), { token: repo.key })
      expect(usage.status).toBe(200)
      expect(usage.body.limitBytes).toBe(100 * 1024 ** 3)
      expect(usage.body.repositories).toEqual([{ name: "r", bytes: usage.body.usedBytes }])
      expect(usage.body.usedBytes).toBeGreaterThan(0)

      // The admin API sets the organization's storage just at what it uses: 100%.
      const patched = yield* request(`${baseUrl}/api/v1/admin/orgs/${repo.slug}`, {
        token: adminToken,
        method: "PATCH",
        body: { storageLimitBytes: usage.body.usedBytes }
      })
      expect(patched.body.storageLimitBytes).toBe(usage.body.usedBytes)
      const full = yield* request(code(baseUrl, "/storage"), { token: repo.key })
      expect(full.body.percent).toBe(100)

      const merge = yield* pulls.merge(opened.body.number)
      expect(merge.status).toBe(409)
      expect(merge.body.message).toContain("storage")
      expect((yield* pulls.get(opened.body.number)).body.state).toBe("open")
      // A suggestion's commit takes the same path: refused too.
      const apply = yield* request(
        pulls.url(`/${opened.body.number}/suggestions/${suggested.body.suggestion.id}/apply`),
        {
          method: "POST",
          token: repo.key
        }
      )
      expect(apply.status).toBe(409)
      expect(apply.body.message).toContain("storage")
      yield* commit(git, dir, { "g.txt": "g\n" }, "g")
      const push = yield* git.run(["push", "origin", "feature"], { cwd: dir })
      expect(push.code).not.toBe(0)
      expect(push.stderr).toContain("storage")
      yield* git.ok(["clone", "-q", repo.url, git.dir("full-clone")])
    }))

  it.effect("transfer: accepted by the target's admin; pull requests, numbers and webhooks move; old paths redirect", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const { dir, repo } = yield* repoWithMain(git, baseUrl, slug("from"))
      yield* pushBranch(git, dir, "feature", [{ "f.txt": "f\n" }])
      const opened = yield* api(baseUrl, repo).create({ title: "Feature", sourceBranch: "feature" })
      const number = opened.body.number as number
      const receiver = yield* startReceiver()
      const hook = yield* request(code(baseUrl, `/repos/${repo.slug}/r/webhooks`), {
        method: "POST",
        token: repo.key,
        body: { url: receiver.url(), events: ["push"], secret: "s3cret" }
      })
      expect(hook.status).toBe(201)
      // A secret CI variable and an AI provider key: sealed under the source organization's key.
      const variable = yield* request(code(baseUrl, `/repos/${repo.slug}/r/ci/variables/DEPLOY_TOKEN`), {
        method: "PUT",
        token: repo.key,
        body: { value: "ci-s3cret", secret: true }
      })
      expect(variable.status).toBe(201)
      const ai = yield* request(code(baseUrl, `/repos/${repo.slug}/r/ai/settings`), {
        method: "PATCH",
        token: repo.key,
        body: { apiKey: "sk-transfer-key" }
      })
      expect(ai.status).toBe(200)

      // The same user is admin of the target organization, with a key there.
      const target = slug("to")
      const admin = { token: "adm_test_token_0123456789" }
      yield* request(`${baseUrl}/api/v1/admin/orgs`, { ...admin, method: "POST", body: { slug: target, name: "T" } })
      const username = `${repo.slug}-owner`
      yield* request(`${baseUrl}/api/v1/admin/orgs/${target}/users`, {
        ...admin,
        method: "POST",
        body: { username, email: `${username}@example.com`, role: "admin" }
      })
      const targetKey = (yield* request(`${baseUrl}/api/v1/admin/orgs/${target}/keys`, {
        ...admin,
        method: "POST",
        body: { username }
      })).body.key as string

      const unknown = yield* request(code(baseUrl, `/repos/${repo.slug}/r/transfer`), {
        method: "POST",
        token: repo.key,
        body: { targetOrg: "no-such-org" }
      })
      expect(unknown.status).toBe(404)
      const requested = yield* request(code(baseUrl, `/repos/${repo.slug}/r/transfer`), {
        method: "POST",
        token: repo.key,
        body: { targetOrg: target }
      })
      expect(requested.status).toBe(201)
      expect(requested.body).toMatchObject({ fromOrg: repo.slug, toOrg: target, state: "pending" })
      expect(Date.parse(requested.body.expiresAt) - Date.parse(requested.body.createdAt)).toBe(7 * 24 * 3600 * 1000)
      const incoming = yield* request(code(baseUrl, "/transfers"), { token: targetKey })
      expect(incoming.body.transfers.map((t: { id: string }) => t.id)).toEqual([requested.body.id])
      // The source side cannot accept its own request.
      const own = yield* request(code(baseUrl, `/transfers/${requested.body.id}/accept`), {
        method: "POST",
        token: repo.key
      })
      expect(own.status).toBe(403)

      const accepted = yield* request(code(baseUrl, `/transfers/${requested.body.id}/accept`), {
        method: "POST",
        token: targetKey
      })
      expect(accepted.status).toBe(200)
      expect(accepted.body.state).toBe("accepted")

      // Under the new organization: the repository keeps its id, the pull request its number.
      const moved = yield* request(code(baseUrl, `/repos/${target}/r`), { token: targetKey })
      expect(moved.body.id).toBe(repo.id)
      const pr = yield* request(code(baseUrl, `/repos/${target}/r/pulls/${number}`), { token: targetKey })
      expect(pr.body).toMatchObject({ id: opened.body.id, number, state: "open" })
      // A key of the old organization gets 404; the old path redirects for the new one.
      expect((yield* request(code(baseUrl, `/repos/${repo.slug}/r`), { token: repo.key })).status).toBe(404)
      expect((yield* request(code(baseUrl, `/repos/${target}/r`), { token: repo.key })).status).toBe(404)
      const old = yield* Effect.promise(() =>
        fetch(code(baseUrl, `/repos/${repo.slug}/r/pulls/${number}`), {
          headers: { authorization: `Bearer ${targetKey}` },
          redirect: "manual"
        })
      )
      expect(old.status).toBe(301)
      expect(old.headers.get("location")).toBe(`/api/v1/code/repos/${target}/r/pulls/${number}`)

      // The CI variable and the AI key open under the new organization (re-encrypted with the move).
      const { ciSettings, aiSettings, repositories } = yield* TestApp
      const record = Option.getOrThrow(yield* repositories.find(target, "r"))
      expect(record.orgId).not.toBe(repo.org.id)
      expect((yield* ciSettings.jobVariables(record)).secrets).toEqual(["ci-s3cret"])
      const review = yield* aiSettings.reviewConfig(record)
      expect(Option.map(review.apiKey, Redacted.value)).toEqual(Option.some("sk-transfer-key"))

      // The webhook works under the new organization, signed with its (re-encrypted) secret.
      const clone = git.dir("old-path-clone")
      yield* git.ok(["clone", "-q", cloneUrl(baseUrl, repo.slug, "r", targetKey), clone])
      const pushed = yield* commit(git, clone, { "n.txt": "n\n" }, "after the transfer")
      yield* git.ok(["push", "-q", cloneUrl(baseUrl, target, "r", targetKey), "main"], { cwd: clone })
      const [delivery] = yield* eventually(
        "the push webhook",
        Effect.sync(() => receiver.on("/hook")),
        (r) => r.some((d) => d.body.toString().includes(pushed))
      )
      const signature = createHmac("sha256", "s3cret").update(delivery.body).digest("hex")
      expect(delivery.headers["x-service-signature"]).toBe(`sha256=${signature}`)

      // A repository created under the old name ends the redirect.
      yield* request(code(baseUrl, "/repos"), { method: "POST", token: repo.key, body: { name: "r" } })
      const reused = yield* Effect.promise(() =>
        fetch(code(baseUrl, `/repos/${repo.slug}/r`), {
          headers: { authorization: `Bearer ${targetKey}` },
          redirect: "manual"
        })
      )
      expect(reused.status).toBe(404)
    }))

  it.effect("the purge sweep takes repositories 30 days after their deletion, not before", () =>
    Effect.gen(function*() {
      const { baseUrl, lifecycle, sql } = yield* TestApp
      const git = yield* gitClient
      const repo = yield* createRepo(baseUrl, { slug: slug("sweep") })
      yield* pushedWorkTree(git, repo.url)
      yield* request(code(baseUrl, `/repos/${repo.slug}/r`), { method: "DELETE", token: repo.key })
      const [row] = yield* sql`SELECT deleted_at FROM repositories WHERE id = ${repo.id}`.pipe(Effect.orDie)
      const deletedAt = (row as { deleted_at: Date }).deleted_at.getTime()
      const exists = Effect.map(
        sql`SELECT id FROM repositories WHERE id = ${repo.id}`.pipe(Effect.orDie),
        (rows) => rows.length === 1
      )
      yield* lifecycle.purgeDue(deletedAt + 29 * 24 * 3600 * 1000)
      expect(yield* exists).toBe(true)
      yield* lifecycle.purgeDue(deletedAt + 30 * 24 * 3600 * 1000 + 1000)
      expect(yield* exists).toBe(false)
    }))

  it.effect("storage warning: on every push from 80%, one e-mail to the owners per crossing", () =>
    Effect.gen(function*() {
      const { baseUrl, sql } = yield* TestApp
      const git = yield* gitClient
      const repo = yield* createRepo(baseUrl, { slug: slug("warn") })
      const { dir } = yield* pushedWorkTree(git, repo.url)
      // A large incompressible file, so a small push moves the share by a fraction of a percent.
      yield* commit(git, dir, { "big.bin": randomBytes(512 * 1024) }, "big")
      yield* git.ok(["push", "-q", repo.url, "main"], { cwd: dir })
      const used = (yield* request(code(baseUrl, "/storage"), { token: repo.key })).body.usedBytes as number
      const setLimit = (bytes: number) =>
        request(`${baseUrl}/api/v1/admin/orgs/${repo.slug}`, {
          token: adminToken,
          method: "PATCH",
          body: { storageLimitBytes: bytes }
        })
      const mails = sql`SELECT recipient FROM mail_outbox WHERE subject LIKE ${`%${repo.slug} uses%`}`.pipe(
        Effect.orDie
      )
      const pushOnce = (name: string) =>
        Effect.gen(function*() {
          yield* commit(git, dir, { [name]: `${name}\n` }, name)
          return yield* git.run(["push", repo.url, "main"], { cwd: dir })
        })

      yield* setLimit(Math.ceil(used / 0.85))
      const first = yield* pushOnce("one")
      expect(first.code).toBe(0)
      expect(first.stderr).toContain("warning")
      expect((yield* pushOnce("two")).stderr).toContain("warning")
      expect(yield* mails).toEqual([{ recipient: `${repo.slug}-owner@example.com` }])

      // Below the line again, then over it: a new crossing, a new e-mail.
      yield* setLimit(used * 100)
      expect((yield* pushOnce("three")).stderr).not.toContain("warning")
      const now = (yield* request(code(baseUrl, "/storage"), { token: repo.key })).body.usedBytes as number
      yield* setLimit(Math.ceil(now / 0.9))
      expect((yield* pushOnce("four")).stderr).toContain("warning")
      expect((yield* mails).length).toBe(2)
    }))
})
