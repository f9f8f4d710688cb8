import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { commit, createRepo, gitClient, pushedWorkTree } from "../git/gitClient.ts"
import { adminToken, request, startApp } from "../support/app.ts"
import { addMember, branchSha, createRule } from "./support.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string }>()("test/protection/RulesApp") {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl })))

let counter = 0
const newRepo = (plan: string) =>
  Effect.flatMap(TestApp, ({ baseUrl }) => createRepo(baseUrl, { slug: `ra-${process.pid}-${++counter}`, plan }))

const rulesUrl = (baseUrl: string, repo: { slug: string; name: string }) =>
  `${baseUrl}/api/v1/code/repos/${repo.slug}/${repo.name}/branches/protection`

layer(TestAppLive, { excludeTestServices: true, timeout: "240 seconds" })("Branch protection rules API", (it) => {
  it.effect("creates a rule with the spec's defaults, lists, reads, updates and deletes it", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const repo = yield* newRepo("free")
      const created = yield* request(rulesUrl(baseUrl, repo), {
        method: "POST",
        token: repo.key,
        body: { branchPattern: "release/*" }
      })
      expect(created.status).toBe(201)
      expect(created.body).toMatchObject({
        branchPattern: "release/*",
        requirePullRequest: true,
        requiredApprovals: 1,
        dismissStaleReviews: false,
        requireCodeOwnerReview: false,
        requireSignedCommits: false,
        requireLinearHistory: false,
        allowForcePush: false,
        allowDeletions: false,
        restrictPushUsers: [],
        requireStatusChecks: false,
        requiredStatusChecks: [],
        bypassUsers: [],
        notEnforced: []
      })
      expect(created.body.id).toMatch(/^rule_/)
      const id = created.body.id as string
      const listed = yield* request(rulesUrl(baseUrl, repo), { token: repo.key })
      expect(listed.body).toEqual({ rules: [created.body], count: 1 })
      const patched = yield* request(`${rulesUrl(baseUrl, repo)}/${id}`, {
        method: "PATCH",
        token: repo.key,
        body: { requiredApprovals: 2, bypassUsers: ["someone"], branchPattern: "release/**" }
      })
      expect(patched.status).toBe(200)
      expect(patched.body).toMatchObject({
        requiredApprovals: 2,
        bypassUsers: ["someone"],
        branchPattern: "release/**"
      })
      expect((yield* request(`${rulesUrl(baseUrl, repo)}/${id}`, { token: repo.key })).body).toEqual(patched.body)
      const removed = yield* request(`${rulesUrl(baseUrl, repo)}/${id}`, { method: "DELETE", token: repo.key })
      expect(removed.status).toBe(204)
      expect((yield* request(`${rulesUrl(baseUrl, repo)}/${id}`, { token: repo.key })).status).toBe(404)
      expect((yield* request(rulesUrl(baseUrl, repo), { token: repo.key })).body.count).toBe(0)
    }))

  it.effect("bad input is a 400; members may read rules but not write them", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const repo = yield* newRepo("free")
      for (
        const body of [
          {},
          { branchPattern: "" },
          { branchPattern: "main", requiredApprovals: -1 },
          { branchPattern: "main", requiredApprovals: 11 },
          { branchPattern: "main", unknown: true },
          { branchPattern: "refs/heads/main" }
        ]
      ) {
        const response = yield* request(rulesUrl(baseUrl, repo), { method: "POST", token: repo.key, body })
        expect([JSON.stringify(body), response.status, response.body.error]).toEqual([
          JSON.stringify(body),
          400,
          "validation_error"
        ])
      }
      const member = yield* addMember(baseUrl, repo.slug, `m-${repo.slug}`)
      yield* createRule(baseUrl, repo, { branchPattern: "main" })
      expect((yield* request(rulesUrl(baseUrl, repo), { token: member.key })).status).toBe(200)
      const write = yield* request(rulesUrl(baseUrl, repo), {
        method: "POST",
        token: member.key,
        body: { branchPattern: "x" }
      })
      expect(write.status).toBe(403)
      expect(write.body.error).toBe("forbidden")
    }))

  it.effect("another organization's repository, rules and statuses answer 404", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const repo = yield* newRepo("enterprise")
      const other = yield* newRepo("enterprise")
      const rule = yield* createRule(baseUrl, repo, { branchPattern: "main" })
      const sha = "a".repeat(40)
      const attempts = [
        request(rulesUrl(baseUrl, repo), { token: other.key }),
        request(rulesUrl(baseUrl, repo), { method: "POST", token: other.key, body: { branchPattern: "x" } }),
        request(`${rulesUrl(baseUrl, repo)}/${rule.id}`, { token: other.key }),
        request(`${rulesUrl(baseUrl, repo)}/${rule.id}`, { method: "DELETE", token: other.key }),
        // The other organization's own repository path with this rule's id.
        request(`${rulesUrl(baseUrl, other)}/${rule.id}`, { token: other.key }),
        request(`${rulesUrl(baseUrl, other)}/${rule.id}`, { method: "PATCH", token: other.key, body: {} }),
        request(`${baseUrl}/api/v1/code/repos/${repo.slug}/${repo.name}/statuses/${sha}`, {
          method: "POST",
          token: other.key,
          body: { state: "success", context: "ci" }
        }),
        request(`${baseUrl}/api/v1/code/repos/${repo.slug}/${repo.name}/commits/${sha}/statuses`, { token: other.key })
      ]
      for (const attempt of attempts) {
        const response = yield* attempt
        expect([response.status, response.body.error]).toEqual([404, "not_found"])
      }
      expect((yield* request(`${rulesUrl(baseUrl, repo)}/${rule.id}`, { token: repo.key })).status).toBe(200)
    }))

  it.effect("options beyond the plan are a 403 plan_required naming the plan", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const free = yield* newRepo("hobby")
      const pro = yield* newRepo("pro")
      const cases: Array<[typeof free, object, string | null]> = [
        [free, { requireStatusChecks: true, requiredStatusChecks: ["ci/test"] }, "pro"],
        [free, { requireCodeOwnerReview: true }, "pro"],
        [free, { requireLinearHistory: true }, "pro"],
        [free, { requireSignedCommits: true }, "enterprise"],
        [free, { restrictPushUsers: ["x"] }, "enterprise"],
        [free, { requiredApprovals: 3, dismissStaleReviews: true, allowForcePush: true, allowDeletions: true }, null],
        [pro, { requireStatusChecks: true, requireCodeOwnerReview: true, requireLinearHistory: true }, null],
        [pro, { requireSignedCommits: true }, "enterprise"],
        [pro, { restrictPushUsers: ["x"] }, "enterprise"]
      ]
      for (const [repo, options, requiredPlan] of cases) {
        const response = yield* request(rulesUrl(baseUrl, repo), {
          method: "POST",
          token: repo.key,
          body: { branchPattern: "main", ...options }
        })
        if (requiredPlan === null) {
          expect(response.status).toBe(201)
        } else {
          expect([JSON.stringify(options), response.status, response.body.error, response.body.requiredPlan]).toEqual(
            [JSON.stringify(options), 403, "plan_required", requiredPlan]
          )
          expect(response.body.message).toEqual(expect.any(String))
        }
      }
      // PATCH turning a gated option on is refused the same way.
      const rule = yield* createRule(baseUrl, free, { branchPattern: "dev" })
      const patched = yield* request(`${rulesUrl(baseUrl, free)}/${rule.id}`, {
        method: "PATCH",
        token: free.key,
        body: { requireLinearHistory: true }
      })
      expect([patched.status, patched.body.requiredPlan]).toEqual([403, "pro"])
    }))

  it.effect("a downgrade keeps the rule, says which options are no longer enforced, and stops enforcing them", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const repo = yield* newRepo("enterprise")
      yield* pushedWorkTree(git, repo.url, "owner")
      const bob = yield* addMember(baseUrl, repo.slug, `bob-${repo.slug}`)
      const rule = yield* createRule(baseUrl, repo, {
        branchPattern: "main",
        requirePullRequest: false,
        requireLinearHistory: true,
        restrictPushUsers: ["nobody"]
      })
      const dir = git.dir("bob")
      yield* git.ok(["clone", "-q", bob.url, dir])
      const next = yield* commit(git, dir, { "b.txt": "b\n" }, "b")
      expect((yield* git.run(["push", "origin", "main"], { cwd: dir })).code).not.toBe(0)

      const downgraded = yield* request(`${baseUrl}/api/v1/admin/orgs/${repo.slug}`, {
        method: "PATCH",
        token: adminToken,
        body: { plan: "pro" }
      })
      expect(downgraded.status).toBe(200)
      const read = yield* request(`${rulesUrl(baseUrl, repo)}/${rule.id}`, { token: repo.key })
      expect(read.body).toMatchObject({ restrictPushUsers: ["nobody"], notEnforced: ["restrictPushUsers"] })
      yield* git.ok(["push", "origin", "main"], { cwd: dir })
      expect(yield* branchSha(baseUrl, repo, "main")).toBe(next)

      // Still editable on the lower plan without dropping the kept option.
      const patched = yield* request(`${rulesUrl(baseUrl, repo)}/${rule.id}`, {
        method: "PATCH",
        token: repo.key,
        body: { allowForcePush: true }
      })
      expect(patched.status).toBe(200)

      yield* request(`${baseUrl}/api/v1/admin/orgs/${repo.slug}`, {
        method: "PATCH",
        token: adminToken,
        body: { plan: "free" }
      })
      const listed = yield* request(rulesUrl(baseUrl, repo), { token: repo.key })
      expect(listed.body.rules[0].notEnforced).toEqual(["requireLinearHistory", "restrictPushUsers"])

      // Back on Enterprise, the kept options bind again.
      yield* request(`${baseUrl}/api/v1/admin/orgs/${repo.slug}`, {
        method: "PATCH",
        token: adminToken,
        body: { plan: "enterprise" }
      })
      yield* commit(git, dir, { "c.txt": "c\n" }, "c")
      expect((yield* git.run(["push", "origin", "main"], { cwd: dir })).code).not.toBe(0)
      expect(yield* branchSha(baseUrl, repo, "main")).toBe(next)
    }))
})
