import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { BranchRules } from "../../services/pulls/BranchRules.ts"
import { commit, createRepo, gitClient, pushedWorkTree } from "../git/gitClient.ts"
import { request, startApp } from "../support/app.ts"
import { addMember, branchSha, createRule, recordOf } from "./support.ts"

class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly context: Context.Context<never>
}>()("test/protection/BypassApp") {}
const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl, context: app.context as Context.Context<never> }))
)

let counter = 0

const auditOf = (baseUrl: string, token: string, query = "") =>
  Effect.map(request(`${baseUrl}/api/v1/audit${query}`, { token }), (response) => response)

layer(TestAppLive, { excludeTestServices: true, timeout: "240 seconds" })("Branch protection bypass", (it) => {
  it.effect("owners and admins bypass every rule on push, and each bypass writes an audit entry", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const repo = yield* createRepo(baseUrl, { slug: `bp-${process.pid}-${++counter}`, plan: "enterprise" })
      const { dir, head } = yield* pushedWorkTree(git, repo.url, "owner")
      const admin = yield* addMember(baseUrl, repo.slug, `adm-${repo.slug}`, "admin")
      const rule = yield* createRule(baseUrl, repo, { branchPattern: "main", restrictPushUsers: ["nobody"] })

      // A push no rule refuses (a new branch) is no bypass: no entry.
      yield* git.ok(["push", "-q", repo.url, "main:topic"], { cwd: dir })
      expect((yield* auditOf(baseUrl, repo.key)).body.count).toBe(0)

      const next = yield* commit(git, dir, { "b.txt": "b\n" }, "b")
      yield* git.ok(["push", "-q", repo.url, "main"], { cwd: dir })
      expect(yield* branchSha(baseUrl, repo, "main")).toBe(next)
      yield* git.ok(["push", "-q", "--force", admin.url, `${head}:refs/heads/main`], { cwd: dir })
      expect(yield* branchSha(baseUrl, repo, "main")).toBe(head)

      const audit = yield* auditOf(baseUrl, repo.key)
      expect(audit.status).toBe(200)
      expect(audit.body.count).toBe(2)
      const [forced, pushed] = audit.body.entries
      expect(pushed).toMatchObject({
        action: "protection.bypass.push",
        actor: { username: `${repo.slug}-owner` },
        repo: `${repo.slug}/${repo.name}`,
        ref: "refs/heads/main",
        ruleIds: [rule.id]
      })
      expect(pushed.detail).toContain("changes must be made through a pull request")
      expect(pushed.detail).toContain("you are not allowed to push to this branch")
      expect(forced.actor.username).toBe(admin.username)
      expect(forced.detail).toContain("force push is not allowed")

      // Filters: action, repo, actor, from/to.
      const byActor = yield* auditOf(baseUrl, repo.key, `?actor=${admin.username}`)
      expect(byActor.body.entries.map((e: any) => e.id)).toEqual([forced.id])
      expect((yield* auditOf(baseUrl, repo.key, "?action=protection.bypass.merge")).body.count).toBe(0)
      expect((yield* auditOf(baseUrl, repo.key, `?repo=${repo.name}`)).body.count).toBe(2)
      expect((yield* auditOf(baseUrl, repo.key, "?repo=elsewhere")).body.count).toBe(0)
      expect((yield* auditOf(baseUrl, repo.key, `?from=${encodeURIComponent(forced.createdAt)}`)).body.count)
        .toBeGreaterThanOrEqual(1)
      expect((yield* auditOf(baseUrl, repo.key, "?to=2000-01-01T00:00:00.000Z")).body.count).toBe(0)
      expect((yield* auditOf(baseUrl, repo.key, "?from=yesterday")).status).toBe(400)

      // The audit trail needs org:admin and belongs to the organization.
      const member = yield* addMember(baseUrl, repo.slug, `mem-${repo.slug}`)
      expect((yield* auditOf(baseUrl, member.key)).status).toBe(403)
      const stranger = yield* createRepo(baseUrl, { slug: `bq-${process.pid}-${++counter}` })
      expect((yield* auditOf(baseUrl, stranger.key)).body.count).toBe(0)
    }))

  it.effect("bypassUsers bypass the rule that lists them, not the others", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const repo = yield* createRepo(baseUrl, { slug: `bu-${process.pid}-${++counter}`, plan: "enterprise" })
      yield* pushedWorkTree(git, repo.url, "owner")
      const bob = yield* addMember(baseUrl, repo.slug, `bob-${repo.slug}`)
      const dir = git.dir("bob")
      yield* git.ok(["clone", "-q", bob.url, dir])
      yield* git.ok(["push", "-q", "origin", "main:release/1"], { cwd: dir })
      const mainRule = yield* createRule(baseUrl, repo, { branchPattern: "main", bypassUsers: [bob.username] })
      yield* createRule(baseUrl, repo, { branchPattern: "release/*" })

      const next = yield* commit(git, dir, { "b.txt": "b\n" }, "b")
      yield* git.ok(["push", "-q", "origin", "main"], { cwd: dir })
      expect(yield* branchSha(baseUrl, repo, "main")).toBe(next)
      const refused = yield* git.run(["push", "origin", "main:release/1"], { cwd: dir })
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toContain("changes must be made through a pull request")

      // A second rule on main that does not list bob binds him again.
      yield* createRule(baseUrl, repo, { branchPattern: "ma*" })
      yield* commit(git, dir, { "c.txt": "c\n" }, "c")
      expect((yield* git.run(["push", "origin", "main"], { cwd: dir })).code).not.toBe(0)
      expect(yield* branchSha(baseUrl, repo, "main")).toBe(next)

      const audit = yield* auditOf(baseUrl, repo.key)
      expect(audit.body.entries).toHaveLength(1)
      expect(audit.body.entries[0]).toMatchObject({
        action: "protection.bypass.push",
        actor: { username: bob.username },
        ruleIds: [mainRule.id]
      })
    }))

  it.effect("merge policy: combined strictest-wins in full, and what still binds each actor", () =>
    Effect.gen(function*() {
      const { baseUrl, context } = yield* TestApp
      const repo = yield* createRepo(baseUrl, { slug: `mp-${process.pid}-${++counter}`, plan: "enterprise" })
      const bob = yield* addMember(baseUrl, repo.slug, `bob-${repo.slug}`)
      const carol = yield* addMember(baseUrl, repo.slug, `carol-${repo.slug}`)
      const a = yield* createRule(baseUrl, repo, {
        branchPattern: "release/*",
        requiredApprovals: 1,
        requireStatusChecks: true,
        requiredStatusChecks: ["ci/test"],
        bypassUsers: [bob.username]
      })
      const b = yield* createRule(baseUrl, repo, {
        branchPattern: "release/**",
        requiredApprovals: 3,
        dismissStaleReviews: true,
        requireStatusChecks: true,
        requiredStatusChecks: ["ci/lint", "ci/test"],
        requireSignedCommits: true
      })
      yield* createRule(baseUrl, repo, { branchPattern: "main", requireLinearHistory: true })
      const rules = Context.get(context, BranchRules)
      const member = (id: string, name: string) => ({ id, name, role: "member" as const })

      const forBob = yield* rules.mergePolicy(recordOf(repo), "release/1", member(bob.id, bob.username))
      expect(forBob.full).toEqual({
        ruleIds: [a.id, b.id],
        requiredApprovals: 3,
        dismissStaleReviews: true,
        requireCodeOwnerReview: false,
        requiredStatusChecks: ["ci/lint", "ci/test"],
        requireSignedCommits: true,
        requireLinearHistory: false
      })
      expect(forBob.forActor).toMatchObject({ ruleIds: [b.id], requiredApprovals: 3 })
      const forCarol = yield* rules.mergePolicy(recordOf(repo), "release/1", member(carol.id, carol.username))
      expect(forCarol.forActor).toEqual(forCarol.full)
      const forOwner = yield* rules.mergePolicy(recordOf(repo), "release/1", {
        ...member(repo.user.id, "o"),
        role: "owner"
      })
      expect(forOwner.forActor.ruleIds).toEqual([])
      const server = yield* rules.mergePolicy(recordOf(repo), "release/1", null)
      expect(server.forActor).toEqual(server.full)
      // `release/*` is one level: a deeper branch only matches `release/**`.
      expect((yield* rules.mergePolicy(recordOf(repo), "release/1/x", null)).full.ruleIds).toEqual([b.id])
      expect((yield* rules.mergePolicy(recordOf(repo), "main", null)).full).toMatchObject({
        requireLinearHistory: true,
        requiredApprovals: 1
      })
      expect((yield* rules.mergePolicy(recordOf(repo), "other", null)).full.ruleIds).toEqual([])

      // recordBypass writes a merge audit entry.
      yield* rules.recordBypass({
        repo: recordOf(repo),
        branch: "release/1",
        actor: { id: repo.user.id, name: "ignored display name", role: "owner" },
        action: "merge",
        ruleIds: [a.id, b.id],
        detail: "Merged #1 past: approvals"
      })
      const audit = yield* auditOf(baseUrl, repo.key, "?action=protection.bypass.merge")
      expect(audit.body.entries).toEqual([expect.objectContaining({
        action: "protection.bypass.merge",
        actor: { id: repo.user.id, username: `${repo.slug}-owner` },
        ref: "refs/heads/release/1",
        ruleIds: [a.id, b.id],
        detail: "Merged #1 past: approvals"
      })])
    }))
})
