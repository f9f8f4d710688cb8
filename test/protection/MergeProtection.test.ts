import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { commit, createRepo, gitClient, pushedWorkTree } from "../git/gitClient.ts"
import { api } from "../pulls/support.ts"
import { request, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { addMember, branchSha, createRule, gpgKey, signedCommit } from "./support.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string }>()("test/protection/MergeApp") {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl })))

let counter = 0

const checksOf = (body: any): Record<string, string> =>
  Object.fromEntries((body.checks as Array<{ name: string; status: string }>).map((c) => [c.name, c.status]))

/**
 * An Enterprise repository whose `main` (pushed by the owner, with `CODEOWNERS` naming
 * carol) is protected by `rule`; bob, a member, opens a pull request from `feature`.
 */
const scenario = (rule: object, feature: (dir: string) => Effect.Effect<unknown, never, any> = () => Effect.void) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestApp
    const git = yield* gitClient
    const slug = `mg-${process.pid}-${++counter}`
    const repo = yield* createRepo(baseUrl, { slug, plan: "enterprise" })
    const bob = yield* addMember(baseUrl, slug, `bob-${slug}`)
    const carol = yield* addMember(baseUrl, slug, `carol-${slug}`)
    const dave = yield* addMember(baseUrl, slug, `dave-${slug}`)
    const owner = yield* pushedWorkTree(git, repo.url, "owner")
    yield* commit(git, owner.dir, { CODEOWNERS: `* @${carol.username}\n` }, "owners")
    yield* git.ok(["push", "-q", repo.url, "main"], { cwd: owner.dir })
    const created = yield* createRule(baseUrl, repo, { branchPattern: "main", ...rule })
    const dir = git.dir("bob")
    yield* git.ok(["clone", "-q", bob.url, dir])
    yield* git.ok(["checkout", "-q", "-b", "feature"], { cwd: dir })
    yield* commit(git, dir, { "feature.txt": "feature\n" }, "feature")
    yield* feature(dir)
    yield* git.ok(["push", "-q", "origin", "feature"], { cwd: dir })
    const pulls = api(baseUrl, repo)
    const pr = yield* pulls.create({ title: "Feature", body: "", sourceBranch: "feature" }, bob.key)
    expect(pr.status).toBe(201)
    return { baseUrl, git, repo, bob, carol, dave, dir, pulls, number: pr.body.number as number, ruleId: created.id }
  })

layer(TestAppLive, { excludeTestServices: true, timeout: "300 seconds" })("Branch protection on merge", (it) => {
  it.effect("required approvals block until given; the merge moves a requirePullRequest branch; no audit entry", () =>
    Effect.gen(function*() {
      const t = yield* scenario({ requiredApprovals: 1 })
      const blocked = yield* t.pulls.merge(t.number, {}, t.bob.key)
      expect(blocked.status).toBe(409)
      expect(blocked.body.error).toBe("merge_blocked")
      expect(checksOf(blocked.body)).toMatchObject({ approvals: "failed" })
      expect((yield* t.pulls.review(t.number, { state: "approved" }, t.dave.key)).status).toBe(201)
      const merged = yield* t.pulls.merge(t.number, {}, t.bob.key)
      expect(merged.status).toBe(200)
      expect(yield* branchSha(t.baseUrl, t.repo, "main")).toBe(merged.body.sha)
      expect((yield* request(`${t.baseUrl}/api/v1/audit`, { token: t.repo.key })).body.count).toBe(0)
    }))

  it.effect("dismissStaleReviews: an approval for an older head stops counting after a push", () =>
    Effect.gen(function*() {
      const t = yield* scenario({ requiredApprovals: 1, dismissStaleReviews: true })
      expect((yield* t.pulls.review(t.number, { state: "approved" }, t.dave.key)).status).toBe(201)
      yield* commit(t.git, t.dir, { "more.txt": "more\n" }, "more")
      yield* t.git.ok(["push", "-q", "origin", "feature"], { cwd: t.dir })
      const head = (yield* t.git.ok(["rev-parse", "HEAD"], { cwd: t.dir })).trim()
      yield* eventually("the new head", t.pulls.get(t.number), (r) => r.body.headSha === head)
      const stale = yield* t.pulls.merge(t.number, {}, t.bob.key)
      expect(stale.status).toBe(409)
      expect(checksOf(stale.body)).toMatchObject({ approvals: "failed" })
      expect((yield* t.pulls.review(t.number, { state: "approved" }, t.dave.key)).status).toBe(201)
      expect((yield* t.pulls.merge(t.number, {}, t.bob.key)).status).toBe(200)
    }))

  it.effect("requireCodeOwnerReview: another member's approval is not enough, the owner's is", () =>
    Effect.gen(function*() {
      const t = yield* scenario({ requiredApprovals: 1, requireCodeOwnerReview: true })
      expect((yield* t.pulls.review(t.number, { state: "approved" }, t.dave.key)).status).toBe(201)
      const blocked = yield* t.pulls.merge(t.number, {}, t.bob.key)
      expect(blocked.status).toBe(409)
      expect(checksOf(blocked.body)).toMatchObject({ approvals: "passed", code_owners: "failed" })
      expect((yield* t.pulls.review(t.number, { state: "approved" }, t.carol.key)).status).toBe(201)
      expect((yield* t.pulls.merge(t.number, {}, t.bob.key)).status).toBe(200)
    }))

  it.effect("required status checks: pending, failure and error block, success on every context passes", () =>
    Effect.gen(function*() {
      const t = yield* scenario({
        requiredApprovals: 0,
        requireStatusChecks: true,
        requiredStatusChecks: ["ci/test", "ci/lint"]
      })
      const head = (yield* t.pulls.get(t.number)).body.headSha as string
      const report = (state: string, context: string) =>
        request(`${t.baseUrl}/api/v1/code/repos/${t.repo.slug}/${t.repo.name}/statuses/${head}`, {
          method: "POST",
          token: t.repo.key,
          body: { state, context }
        })
      // Blocked: `pending` while a required context has no status or a pending one, `failed` on failure/error.
      const mergeBlocked = (expected: "pending" | "failed") =>
        Effect.gen(function*() {
          const response = yield* t.pulls.merge(t.number, {}, t.bob.key)
          expect(response.status).toBe(409)
          expect(checksOf(response.body)).toMatchObject({ status_checks: expected })
        })
      yield* mergeBlocked("pending")
      yield* report("success", "ci/lint")
      yield* mergeBlocked("pending")
      yield* report("pending", "ci/test")
      yield* mergeBlocked("pending")
      yield* report("failure", "ci/test")
      yield* mergeBlocked("failed")
      yield* report("error", "ci/test")
      yield* mergeBlocked("failed")
      // A status of another context does not stand in for a required one.
      yield* report("success", "ci/other")
      yield* mergeBlocked("failed")
      yield* report("success", "ci/test")
      expect((yield* t.pulls.merge(t.number, {}, t.bob.key)).status).toBe(200)
    }))

  it.effect("a success status re-evaluates the pull request and auto-merge merges it", () =>
    Effect.gen(function*() {
      const t = yield* scenario({ requiredApprovals: 0, requireStatusChecks: true, requiredStatusChecks: ["ci/test"] })
      const enabled = yield* request(t.pulls.url(`/${t.number}/auto-merge`), {
        method: "PUT",
        token: t.bob.key,
        body: { strategy: "squash" }
      })
      expect(enabled.status).toBe(200)
      const head = (yield* t.pulls.get(t.number)).body.headSha as string
      yield* request(`${t.baseUrl}/api/v1/code/repos/${t.repo.slug}/${t.repo.name}/statuses/${head}`, {
        method: "POST",
        token: t.repo.key,
        body: { state: "success", context: "ci/test" }
      })
      yield* eventually("auto-merge after the status", t.pulls.get(t.number), (r) => r.body.state === "merged", {
        timeoutMs: 60_000
      })
    }))

  it.effect("signed commits: an unsigned commit in the pull request blocks; signed commits pass", () =>
    Effect.gen(function*() {
      const key = yield* gpgKey("Bob <bob@example.com>")
      const t = yield* scenario({ requiredApprovals: 0, requireSignedCommits: true })
      const blocked = yield* t.pulls.merge(t.number, {}, t.bob.key)
      expect(blocked.status).toBe(409)
      expect(checksOf(blocked.body)).toMatchObject({ signed_commits: "failed" })

      yield* request(`${t.baseUrl}/api/v1/user/gpg-keys`, {
        method: "POST",
        token: t.bob.key,
        body: { armoredPublicKey: key.armored }
      })
      // Rewrite the branch with signed commits (force push to an unprotected branch).
      yield* t.git.ok(["reset", "-q", "--hard", "origin/main"], { cwd: t.dir })
      yield* signedCommit(t.git, t.dir, { "feature.txt": "feature\n" }, "feature, signed", key)
      const head = yield* signedCommit(t.git, t.dir, { "more.txt": "more\n" }, "more, signed", key)
      yield* t.git.ok(["push", "-q", "-f", "origin", "feature"], { cwd: t.dir })
      yield* eventually("the signed head", t.pulls.get(t.number), (r) => r.body.headSha === head)
      const merged = yield* t.pulls.merge(t.number, {}, t.bob.key)
      expect(merged.status).toBe(200)
    }))

  it.effect("linear history: strategy merge is refused, squash passes", () =>
    Effect.gen(function*() {
      const t = yield* scenario({ requiredApprovals: 0, requireLinearHistory: true })
      const blocked = yield* t.pulls.merge(t.number, { strategy: "merge" }, t.bob.key)
      expect(blocked.status).toBe(409)
      expect(checksOf(blocked.body)).toMatchObject({ linear_history: "failed" })
      expect((yield* t.pulls.merge(t.number, { strategy: "squash" }, t.bob.key)).status).toBe(200)
    }))

  it.effect("deleteBranch keeps a protected source branch, even for an owner, and writes no audit entry", () =>
    Effect.gen(function*() {
      const t = yield* scenario({ requiredApprovals: 0 })
      yield* createRule(t.baseUrl, t.repo, { branchPattern: "feat*", requirePullRequest: false })
      const head = (yield* t.pulls.get(t.number)).body.headSha as string
      const merged = yield* t.pulls.merge(t.number, { deleteBranch: true }, t.repo.key)
      expect(merged.status).toBe(200)
      expect(yield* branchSha(t.baseUrl, t.repo, "feature")).toBe(head)
      expect((yield* request(`${t.baseUrl}/api/v1/audit`, { token: t.repo.key })).body.count).toBe(0)
    }))

  it.effect("bypass on merge: an owner merges past the rules with an audit entry; a listed user for that rule only", () =>
    Effect.gen(function*() {
      const t = yield* scenario({ requiredApprovals: 2, bypassUsers: [] })
      const owner = yield* t.pulls.merge(t.number, {}, t.repo.key)
      expect(owner.status).toBe(200)
      const audit = yield* request(`${t.baseUrl}/api/v1/audit?action=protection.bypass.merge`, { token: t.repo.key })
      expect(audit.body.entries).toEqual([expect.objectContaining({
        action: "protection.bypass.merge",
        actor: expect.objectContaining({ username: `${t.repo.slug}-owner` }),
        ref: "refs/heads/main",
        ruleIds: [t.ruleId]
      })])
      expect(audit.body.entries[0].detail).toContain("approvals")

      // Bob is listed on the main rule: he bypasses it; a second rule over main binds him.
      const u = yield* scenario({ requiredApprovals: 1, bypassUsers: [] })
      yield* request(`${u.baseUrl}/api/v1/code/repos/${u.repo.slug}/${u.repo.name}/branches/protection/${u.ruleId}`, {
        method: "PATCH",
        token: u.repo.key,
        body: { bypassUsers: [u.bob.username] }
      })
      const other = yield* createRule(u.baseUrl, u.repo, { branchPattern: "ma*", requiredApprovals: 1 })
      const bound = yield* u.pulls.merge(u.number, {}, u.bob.key)
      expect(bound.status).toBe(409)
      yield* request(`${u.baseUrl}/api/v1/code/repos/${u.repo.slug}/${u.repo.name}/branches/protection/${other.id}`, {
        method: "DELETE",
        token: u.repo.key
      })
      expect((yield* u.pulls.merge(u.number, {}, u.bob.key)).status).toBe(200)
      const entries = (yield* request(`${u.baseUrl}/api/v1/audit`, { token: u.repo.key })).body.entries
      expect(entries).toEqual([expect.objectContaining({
        action: "protection.bypass.merge",
        actor: expect.objectContaining({ username: u.bob.username }),
        ruleIds: [u.ruleId]
      })])
    }))
})
