import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { CommitStatusEvent } from "../../schemas/protection/CommitStatuses.ts"
import { publish } from "../../services/events/Events.ts"
import { commit, gitClient } from "../git/gitClient.ts"
import { request, startApp } from "../support/app.ts"
import { eventually, stays } from "../support/wait.ts"
import { testRules } from "./rules.ts"
import { addMember, api, pushBranch, repoWithMain } from "./support.ts"

const rules = testRules()

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string; readonly sql: SqlClient.SqlClient }>()(
  "test/pulls/Merges"
) {}
const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(startApp(undefined, rules.context), (app) => ({ baseUrl: app.baseUrl, sql: app.sql }))
)

let counter = 0
const slug = () => `merge-${process.pid}-${++counter}`

/** A repository where `main` and `feature` both moved on from a shared base. */
const diverged = (featureCommits: ReadonlyArray<Record<string, string>>, author?: string) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestApp
    const git = yield* gitClient
    const { dir, repo } = yield* repoWithMain(git, baseUrl, slug(), { "base.txt": "base\n" })
    yield* git.ok(["checkout", "-q", "-b", "feature"], { cwd: dir })
    for (const [i, files] of featureCommits.entries()) {
      yield* commit(git, dir, files, `feature ${i + 1}`)
      if (author !== undefined) {
        yield* git.ok(["commit", "-q", "--amend", "--no-edit", `--author=${author}`], { cwd: dir })
      }
    }
    yield* git.ok(["push", "-q", "origin", "feature"], { cwd: dir })
    const mainBefore = yield* pushBranch(git, dir, "main", [{ "main.txt": "main\n" }])
    const pulls = api(baseUrl, repo)
    const created = yield* pulls.create({ title: "Feature", body: "The feature", sourceBranch: "feature" })
    expect(created.status).toBe(201)
    return { git, dir, repo, pulls, mainBefore, number: created.body.number as number }
  })

/** `git log` of main on a fresh clone: sha, parents, author, committer, subject. */
const historyOf = (git: Effect.Success<typeof gitClient>, url: string, name: string) =>
  Effect.gen(function*() {
    yield* git.ok(["clone", "-q", url, git.dir(name)])
    const log = yield* git.ok(["log", "--format=%H|%P|%an|%cn|%s", "main"], { cwd: git.dir(name) })
    return log.trim().split("\n").map((line) => {
      const [sha, parents, author, committer, subject] = line.split("|")
      return { sha, parents: parents.split(" ").filter((p) => p !== ""), author, committer, subject }
    })
  })

layer(TestAppLive, { excludeTestServices: true, timeout: "180 seconds" })("Pull request merges", (it) => {
  it.effect("merge: a merge commit with two parents, the request marked merged, events published", () =>
    Effect.gen(function*() {
      const { sql } = yield* TestApp
      const t = yield* diverged([{ "f.txt": "f\n" }])
      const head = (yield* t.pulls.get(t.number)).body.headSha
      const merged = yield* t.pulls.merge(t.number, { strategy: "merge" })
      expect(merged.status).toBe(200)
      expect(merged.body).toMatchObject({ merged: true, strategy: "merge" })
      expect(merged.body.message).toContain(`Merge pull request #${t.number} from feature`)
      const log = yield* historyOf(t.git, t.repo.url, "clone")
      expect(log[0].sha).toBe(merged.body.sha)
      expect(log[0].parents).toEqual([t.mainBefore, head])
      yield* t.git.ok(["cat-file", "-e", "main:f.txt"], { cwd: t.git.dir("clone") })
      yield* t.git.ok(["fsck", "--no-progress"], { cwd: t.git.dir("clone") })

      const pr = (yield* t.pulls.get(t.number)).body
      expect(pr).toMatchObject({ state: "merged", mergeCommitSha: merged.body.sha })
      expect(pr.mergedAt).not.toBeNull()
      expect(pr.mergedBy.username).toBe(`${t.repo.slug}-owner`)
      // Merging again: 409 conflict.
      const again = yield* t.pulls.merge(t.number)
      expect(again.status).toBe(409)
      expect(again.body.error).toBe("conflict")

      const events = yield* sql<{ type: string; data: any }>`
        SELECT type, data FROM domain_events WHERE data->'repository'->>'id' = ${t.repo.id} ORDER BY id`
      const types = events.map((e) => e.type)
      expect(types).toEqual(expect.arrayContaining([
        "pull_request.opened",
        "pull_request.merged",
        "pull_request.closed",
        "push"
      ]))
      const opened = events.find((e) => e.type === "pull_request.opened")!.data
      expect(opened.pullRequest).toMatchObject({
        number: t.number,
        title: "Feature",
        body: "The feature",
        sourceBranch: "feature",
        targetBranch: "main",
        headSha: head
      })
      expect(Object.keys(opened.pullRequest.author).sort()).toEqual(["id", "name"])
      expect(opened.repository.fullName).toBe(`${t.repo.slug}/r`)
      expect(opened.sender.id).toMatch(/^usr_/)
      const push = events.filter((e) => e.type === "push").at(-1)!.data
      expect(push.after).toBe(merged.body.sha)
    }))

  it.effect("squash: one commit on main with every change, authored by the pull request's author", () =>
    Effect.gen(function*() {
      const t = yield* diverged([{ "f1.txt": "1\n" }, { "f2.txt": "2\n" }, { "f3.txt": "3\n" }])
      const merged = yield* t.pulls.merge(t.number, { strategy: "squash", commitMessage: "Squashed feature" })
      expect(merged.status).toBe(200)
      const log = yield* historyOf(t.git, t.repo.url, "clone")
      expect(log[0]).toMatchObject({ sha: merged.body.sha, parents: [t.mainBefore], subject: "Squashed feature" })
      expect(log[0].author).toBe(`${t.repo.slug}-owner`)
      expect(log.slice(1).map((c) => c.subject)).not.toContain("feature 1")
      for (const file of ["f1.txt", "f2.txt", "f3.txt", "main.txt"]) {
        yield* t.git.ok(["cat-file", "-e", `main:${file}`], { cwd: t.git.dir("clone") })
      }
    }))

  it.effect("rebase: each commit replayed on main, linear, authors kept, the merger as committer", () =>
    Effect.gen(function*() {
      const t = yield* diverged(
        [{ "r1.txt": "1\n" }, { "r2.txt": "2\n" }, { "r3.txt": "3\n" }],
        "Grace Hopper <grace@example.com>"
      )
      const merged = yield* t.pulls.merge(t.number, { strategy: "rebase", deleteBranch: true })
      expect(merged.status).toBe(200)
      const log = yield* historyOf(t.git, t.repo.url, "clone")
      expect(log.slice(0, 3).map((c) => c.subject)).toEqual(["feature 3", "feature 2", "feature 1"])
      expect(log[0].sha).toBe(merged.body.sha)
      expect(log[2].parents).toEqual([t.mainBefore])
      for (const c of log) expect(c.parents.length).toBeLessThanOrEqual(1)
      for (const c of log.slice(0, 3)) {
        expect(c.author).toBe("Grace Hopper")
        expect(c.committer).toBe(`${t.repo.slug}-owner`)
      }
      // deleteBranch: the source branch is gone.
      const remote = yield* t.git.ok(["ls-remote", "--heads", t.repo.url])
      expect(remote).not.toContain("refs/heads/feature")
      expect(remote).toContain("refs/heads/main")
    }))

  it.effect("a conflicting pull request is not mergeable and its merge answers 409 with conflicts failed", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const { dir, repo } = yield* repoWithMain(git, baseUrl, slug(), { "shared.txt": "base\n" })
      yield* pushBranch(git, dir, "feature", [{ "shared.txt": "feature\n" }])
      yield* pushBranch(git, dir, "main", [{ "shared.txt": "main\n" }])
      const pulls = api(baseUrl, repo)
      expect((yield* pulls.create({ title: "c", sourceBranch: "feature" })).status).toBe(201)
      const settled = yield* pulls.settled(1)
      expect(settled.body).toMatchObject({ mergeable: false, mergeableState: "dirty" })
      const refused = yield* pulls.merge(1)
      expect(refused.status).toBe(409)
      expect(refused.body.error).toBe("merge_blocked")
      const conflicts = refused.body.checks.find((c: any) => c.name === "conflicts")
      expect(conflicts).toMatchObject({ status: "failed" })
      expect(conflicts.detail).toContain("shared.txt")
      expect(refused.body.checks.map((c: any) => c.name).sort()).toEqual(["changes_requested", "conflicts"])
      expect((yield* pulls.get(1)).body.state).toBe("open")

      // Resolving on the source branch makes it mergeable again (recomputed after the push).
      yield* git.ok(["checkout", "-q", "feature"], { cwd: dir })
      yield* git.run(["merge", "-q", "main"], { cwd: dir })
      yield* commit(git, dir, { "shared.txt": "resolved\n" }, "resolve")
      yield* git.ok(["push", "-q", "origin", "feature"], { cwd: dir })
      const resolvedHead = (yield* git.ok(["rev-parse", "HEAD"], { cwd: dir })).trim()
      const resolved = yield* eventually(
        "mergeable after the push",
        pulls.get(1),
        (r) => r.body.headSha === resolvedHead && r.body.mergeable !== null
      )
      expect(resolved.body.mergeable).toBe(true)
      // The push to the source branch is announced as `pull_request.updated` with the new head.
      const { sql } = yield* TestApp
      const updated = yield* sql<{ data: any }>`
        SELECT data FROM domain_events WHERE type = 'pull_request.updated'
          AND data->'repository'->>'id' = ${repo.id} ORDER BY id`
      expect(updated.map((e) => e.data)).toContainEqual(expect.objectContaining({
        after: resolvedHead,
        changes: ["commits"],
        pullRequest: expect.objectContaining({ number: 1, headSha: resolvedHead })
      }))
      expect((yield* pulls.merge(1)).status).toBe(200)
    }))

  it.effect("a criss-cross history (two merge bases) merges", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const { dir, repo } = yield* repoWithMain(git, baseUrl, slug(), { "base.txt": "base\n" })
      const run = (args: ReadonlyArray<string>) => git.ok(args, { cwd: dir })
      yield* run(["checkout", "-q", "-b", "feature"])
      const b1 = yield* commit(git, dir, { "b1.txt": "b1\n" }, "B1")
      yield* run(["checkout", "-q", "main"])
      const a1 = yield* commit(git, dir, { "a1.txt": "a1\n" }, "A1")
      yield* run(["merge", "-q", "--no-ff", "-m", "main takes B1", b1])
      yield* run(["checkout", "-q", "feature"])
      yield* run(["merge", "-q", "--no-ff", "-m", "feature takes A1", a1])
      yield* commit(git, dir, { "b2.txt": "b2\n" }, "B2")
      yield* run(["checkout", "-q", "main"])
      yield* commit(git, dir, { "a2.txt": "a2\n" }, "A2")
      const bases = (yield* run(["merge-base", "--all", "main", "feature"])).trim().split("\n")
      expect(bases.sort()).toEqual([a1, b1].sort())
      yield* run(["push", "-q", "origin", "main", "feature"])
      const pulls = api(baseUrl, repo)
      expect((yield* pulls.create({ title: "criss-cross", sourceBranch: "feature" })).status).toBe(201)
      expect((yield* pulls.settled(1)).body.mergeable).toBe(true)
      const merged = yield* pulls.merge(1)
      expect(merged.status).toBe(200)
      yield* git.ok(["fetch", "-q", "origin"], { cwd: dir })
      const files = yield* run(["ls-tree", "--name-only", "origin/main"])
      expect(files.trim().split("\n").sort()).toEqual(["a1.txt", "a2.txt", "b1.txt", "b2.txt", "base.txt"])
    }))

  it.effect("reviews: approvals count (not the author's), changes_requested blocks until approved or dismissed", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const t = yield* diverged([{ "f.txt": "f\n" }])
      rules.set(t.repo.slug, { requiredApprovals: 1 })
      const alice = yield* addMember(baseUrl, t.repo.slug, `alice-${counter}`)
      const bob = yield* addMember(baseUrl, t.repo.slug, `bob-${counter}`)
      const names = (checks: ReadonlyArray<any>) => Object.fromEntries(checks.map((c) => [c.name, c.status]))

      // The author's own approval does not count.
      expect((yield* t.pulls.review(t.number, { state: "approved" })).status).toBe(201)
      const own = yield* t.pulls.merge(t.number)
      expect(own.status).toBe(409)
      expect(names(own.body.checks)).toEqual({ approvals: "failed", changes_requested: "passed", conflicts: "passed" })

      // A pending review is stored but does not count until submitted.
      const pending = yield* t.pulls.review(t.number, { state: "pending", body: "draft" }, alice.key)
      expect(pending.body).toMatchObject({ state: "pending", submittedAt: null })
      expect((yield* t.pulls.merge(t.number)).status).toBe(409)
      const submitted = yield* request(
        t.pulls.url(`/${t.number}/reviews/${pending.body.id}/submit`),
        { method: "POST", token: alice.key, body: { state: "approved" } }
      )
      expect(submitted.status).toBe(200)
      expect(submitted.body.state).toBe("approved")
      expect(submitted.body.headSha).toMatch(/^[0-9a-f]{40}$/)

      // Bob asks for changes: blocked though Alice approved.
      const changes = yield* t.pulls.review(t.number, { state: "changes_requested", body: "no" }, bob.key)
      const blocked = yield* t.pulls.merge(t.number)
      expect(blocked.status).toBe(409)
      expect(names(blocked.body.checks)).toMatchObject({ approvals: "passed", changes_requested: "failed" })
      expect(blocked.body.checks.find((c: any) => c.name === "changes_requested").detail).toContain("bob")
      // A later comment by Bob does not lift it; dismissing does.
      expect((yield* t.pulls.review(t.number, { state: "commented", body: "still" }, bob.key)).status).toBe(201)
      expect((yield* t.pulls.merge(t.number)).status).toBe(409)
      const dismissed = yield* request(t.pulls.url(`/${t.number}/reviews/${changes.body.id}/dismiss`), {
        method: "POST",
        token: alice.key,
        body: { message: "addressed" }
      })
      expect(dismissed.status).toBe(200)
      expect(dismissed.body).toMatchObject({ dismissed: true, dismissMessage: "addressed" })
      const reviews = yield* request(t.pulls.url(`/${t.number}/reviews`), { token: t.repo.key })
      expect(reviews.body.count).toBe(4)
      expect((yield* t.pulls.merge(t.number)).status).toBe(200)
    }))

  it.effect("auto-merge merges when the last approval arrives", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const t = yield* diverged([{ "auto.txt": "auto\n" }])
      rules.set(t.repo.slug, { requiredApprovals: 1 })
      const carol = yield* addMember(baseUrl, t.repo.slug, `carol-${counter}`)
      const enabled = yield* request(t.pulls.url(`/${t.number}/auto-merge`), {
        method: "PUT",
        token: t.repo.key,
        body: { strategy: "squash", deleteBranch: true }
      })
      expect(enabled.status).toBe(200)
      expect(enabled.body.autoMerge).toMatchObject({ strategy: "squash", deleteBranch: true })
      yield* t.pulls.settled(t.number)
      yield* stays(t.pulls.get(t.number), (r) => r.body.state === "open")
      expect((yield* t.pulls.review(t.number, { state: "approved" }, carol.key)).status).toBe(201)
      const merged = yield* eventually("auto-merge", t.pulls.get(t.number), (r) => r.body.state === "merged")
      expect(merged.body.mergedBy.username).toBe(`${t.repo.slug}-owner`)
      const log = yield* historyOf(t.git, t.repo.url, "clone")
      expect(log[0]).toMatchObject({ sha: merged.body.mergeCommitSha, parents: [t.mainBefore] })
      const remote = yield* t.git.ok(["ls-remote", "--heads", t.repo.url])
      expect(remote).not.toContain("refs/heads/feature")
    }))

  it.effect("a required status check blocks while pending and auto-merge merges when it succeeds", () =>
    Effect.gen(function*() {
      const { sql } = yield* TestApp
      const t = yield* diverged([{ "ci.txt": "ci\n" }])
      rules.set(t.repo.slug, { requiredStatusChecks: ["ci/test"] })
      const head = (yield* t.pulls.get(t.number)).body.headSha as string
      const pending = yield* t.pulls.merge(t.number)
      expect(pending.status).toBe(409)
      expect(pending.body.checks.find((c: any) => c.name === "status_checks")).toMatchObject({ status: "pending" })
      rules.setStatus(head, "ci/test", "failure")
      const failing = yield* t.pulls.merge(t.number)
      expect(failing.body.checks.find((c: any) => c.name === "status_checks")).toMatchObject({ status: "failed" })

      const enabled = yield* request(t.pulls.url(`/${t.number}/auto-merge`), {
        method: "PUT",
        token: t.repo.key,
        body: { strategy: "rebase" }
      })
      expect(enabled.status).toBe(200)
      yield* stays(t.pulls.get(t.number), (r) => r.body.state === "open")
      // The status turns green: its event re-evaluates the pull requests whose head it names.
      rules.setStatus(head, "ci/test", "success")
      const [{ orgId }] = yield* sql<
        { orgId: string }
      >`SELECT org_id AS "orgId" FROM repositories WHERE id = ${t.repo.id}`
      yield* publish(
        CommitStatusEvent.make(orgId, { repoId: t.repo.id, sha: head, context: "ci/test", state: "success" })
      )
        .pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie)
      const merged = yield* eventually("auto-merge on success", t.pulls.get(t.number), (r) => r.body.state === "merged")
      expect(merged.body.mergeCommitSha).toMatch(/^[0-9a-f]{40}$/)
    }))
})
