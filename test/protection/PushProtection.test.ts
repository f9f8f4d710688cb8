import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { commit, createRepo, gitClient, pushedWorkTree } from "../git/gitClient.ts"
import { startApp } from "../support/app.ts"
import { addMember, branchSha, createRule } from "./support.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string }>()("test/protection/PushApp") {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl })))

let counter = 0

/** A repository with `main` pushed by its owner, and a member `bob` with a clone of it. */
const setup = Effect.gen(function*() {
  const { baseUrl } = yield* TestApp
  const git = yield* gitClient
  const repo = yield* createRepo(baseUrl, { slug: `pp-${process.pid}-${++counter}`, plan: "enterprise" })
  const { head } = yield* pushedWorkTree(git, repo.url, "owner")
  const bob = yield* addMember(baseUrl, repo.slug, `bob-${repo.slug}`)
  const dir = git.dir("bob")
  yield* git.ok(["clone", "-q", bob.url, dir])
  return { baseUrl, git, repo, bob, dir, head }
})

layer(TestAppLive, { excludeTestServices: true, timeout: "240 seconds" })("Branch protection on push", (it) => {
  it.effect("requirePullRequest refuses a direct update with a readable reason; other refs of the push go through", () =>
    Effect.gen(function*() {
      const { baseUrl, dir, git, head, repo } = yield* setup
      yield* createRule(baseUrl, repo, { branchPattern: "main" })
      const next = yield* commit(git, dir, { "b.txt": "b\n" }, "b")
      yield* git.ok(["branch", "topic"], { cwd: dir })
      const pushed = yield* git.run(["push", "origin", "main", "topic"], { cwd: dir })
      expect(pushed.code).not.toBe(0)
      expect(pushed.stderr).toContain("remote: ")
      expect(pushed.stderr).toContain("protected branch: changes must be made through a pull request")
      expect(pushed.stderr).toMatch(/! \[remote rejected\] +main -> main/)
      expect(yield* branchSha(baseUrl, repo, "main")).toBe(head)
      expect(yield* branchSha(baseUrl, repo, "topic")).toBe(next)
      // A new branch matching a rule may be created (there is nothing to review yet).
      yield* createRule(baseUrl, repo, { branchPattern: "release/*" })
      yield* git.ok(["push", "origin", "topic:release/1"], { cwd: dir })
      expect(yield* branchSha(baseUrl, repo, "release/1")).toBe(next)
    }))

  it.effect("refuses force pushes unless allowForcePush, deletions unless allowDeletions", () =>
    Effect.gen(function*() {
      const { baseUrl, dir, git, head, repo } = yield* setup
      const rule = yield* createRule(baseUrl, repo, { branchPattern: "main", requirePullRequest: false })
      const forward = yield* commit(git, dir, { "b.txt": "b\n" }, "b")
      yield* git.ok(["push", "origin", "main"], { cwd: dir })
      expect(yield* branchSha(baseUrl, repo, "main")).toBe(forward)

      yield* git.ok(["reset", "-q", "--hard", head], { cwd: dir })
      const rewritten = yield* commit(git, dir, { "c.txt": "c\n" }, "rewritten")
      const forced = yield* git.run(["push", "--force", "origin", "main"], { cwd: dir })
      expect(forced.code).not.toBe(0)
      expect(forced.stderr).toContain("protected branch: force push is not allowed")
      expect(yield* branchSha(baseUrl, repo, "main")).toBe(forward)

      const deleted = yield* git.run(["push", "origin", ":main"], { cwd: dir })
      expect(deleted.code).not.toBe(0)
      expect(deleted.stderr).toContain("protected branch: branch deletion is not allowed")
      expect(yield* branchSha(baseUrl, repo, "main")).toBe(forward)

      const patched = yield* Effect.promise(() =>
        fetch(`${baseUrl}/api/v1/code/repos/${repo.slug}/${repo.name}/branches/protection/${rule.id}`, {
          method: "PATCH",
          headers: { authorization: `Bearer ${repo.key}`, "content-type": "application/json" },
          body: JSON.stringify({ allowForcePush: true, allowDeletions: true })
        })
      )
      expect(patched.status).toBe(200)
      yield* git.ok(["push", "--force", "origin", "main"], { cwd: dir })
      expect(yield* branchSha(baseUrl, repo, "main")).toBe(rewritten)
      yield* git.ok(["push", "origin", "main:other"], { cwd: dir })
      yield* git.ok(["push", "origin", ":main"], { cwd: dir })
      expect(yield* branchSha(baseUrl, repo, "main")).toBeUndefined()
    }))

  it.effect("restrictPushUsers lets only the listed users push", () =>
    Effect.gen(function*() {
      const { baseUrl, dir, git, repo } = yield* setup
      const carol = yield* addMember(baseUrl, repo.slug, `carol-${repo.slug}`)
      yield* createRule(baseUrl, repo, {
        branchPattern: "main",
        requirePullRequest: false,
        restrictPushUsers: [carol.username]
      })
      const next = yield* commit(git, dir, { "b.txt": "b\n" }, "b")
      const refused = yield* git.run(["push", "origin", "main"], { cwd: dir })
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toContain("protected branch: you are not allowed to push to this branch")
      const accepted = yield* git.run(["push", carol.url, "main"], { cwd: dir })
      expect(accepted.code).toBe(0)
      expect(yield* branchSha(baseUrl, repo, "main")).toBe(next)
    }))

  it.effect("requireLinearHistory refuses merge commits among the new ones", () =>
    Effect.gen(function*() {
      const { baseUrl, dir, git, head, repo } = yield* setup
      yield* createRule(baseUrl, repo, { branchPattern: "main", requirePullRequest: false, requireLinearHistory: true })
      yield* git.ok(["checkout", "-q", "-b", "side"], { cwd: dir })
      yield* commit(git, dir, { "side.txt": "s\n" }, "side")
      yield* git.ok(["checkout", "-q", "main"], { cwd: dir })
      yield* commit(git, dir, { "main.txt": "m\n" }, "main")
      yield* git.ok(["merge", "-q", "--no-ff", "--no-edit", "side"], { cwd: dir })
      const merged = yield* git.run(["push", "origin", "main"], { cwd: dir })
      expect(merged.code).not.toBe(0)
      expect(merged.stderr).toMatch(/protected branch: merge commit [0-9a-f]{7} is not allowed \(linear history/)
      expect(yield* branchSha(baseUrl, repo, "main")).toBe(head)
      // Rebased instead: accepted.
      yield* git.ok(["reset", "-q", "--hard", "HEAD^1"], { cwd: dir })
      yield* git.ok(["cherry-pick", "side"], { cwd: dir })
      yield* git.ok(["push", "origin", "main"], { cwd: dir })
      expect(yield* branchSha(baseUrl, repo, "main")).toBe((yield* git.ok(["rev-parse", "HEAD"], { cwd: dir })).trim())
    }))

  it.effect("patterns: exact, one level, any depth and prefix, in the branch list and through enforcement", () =>
    Effect.gen(function*() {
      const { baseUrl, dir, git, repo } = yield* setup
      const branches = ["main", "main2", "release/1", "release/1/x", "feature/a", "feature/a/b", "hotfix-1", "hotfix/1"]
      // Created before the rules, so every branch exists; then each gets an update.
      yield* git.ok(["push", "origin", ...branches.filter((b) => b !== "main").map((b) => `main:${b}`)], { cwd: dir })
      for (const branchPattern of ["main", "release/*", "feature/**", "hotfix-*"]) {
        yield* createRule(baseUrl, repo, { branchPattern })
      }
      const expected = new Set(["main", "release/1", "feature/a", "feature/a/b", "hotfix-1"])
      const list = yield* Effect.promise(() =>
        fetch(`${baseUrl}/api/v1/code/repos/${repo.slug}/${repo.name}/branches`, {
          headers: { authorization: `Bearer ${repo.key}` }
        }).then((response) => response.json() as Promise<{ branches: Array<{ name: string; protected: boolean }> }>)
      )
      expect(Object.fromEntries(list.branches.map((b) => [b.name, b.protected]))).toEqual(
        Object.fromEntries(branches.map((b) => [b, expected.has(b)]))
      )
      yield* commit(git, dir, { "b.txt": "b\n" }, "b")
      for (const branch of branches) {
        const pushed = yield* git.run(["push", "origin", `HEAD:${branch}`], { cwd: dir })
        expect([branch, pushed.code === 0]).toEqual([branch, !expected.has(branch)])
      }
    }))

  it.effect("overlapping rules combine: the strictest value of each option wins", () =>
    Effect.gen(function*() {
      const { baseUrl, dir, git, head, repo } = yield* setup
      yield* git.ok(["push", "origin", "main:release/1"], { cwd: dir })
      yield* createRule(baseUrl, repo, {
        branchPattern: "release/*",
        requirePullRequest: false,
        allowForcePush: true,
        allowDeletions: true
      })
      yield* git.ok(["commit", "-q", "--amend", "-m", "amended"], { cwd: dir })
      yield* git.ok(["push", "--force", "origin", "HEAD:release/1"], { cwd: dir })
      yield* git.ok(["reset", "-q", "--hard", head], { cwd: dir })
      yield* git.ok(["commit", "-q", "--amend", "-m", "amended again"], { cwd: dir })
      // A second rule over every branch forbids force pushes and deletions: it wins.
      yield* createRule(baseUrl, repo, { branchPattern: "**", requirePullRequest: false })
      const forced = yield* git.run(["push", "--force", "origin", "HEAD:release/1"], { cwd: dir })
      expect(forced.code).not.toBe(0)
      expect(forced.stderr).toContain("force push is not allowed")
      const deleted = yield* git.run(["push", "origin", ":release/1"], { cwd: dir })
      expect(deleted.code).not.toBe(0)
      expect(yield* branchSha(baseUrl, repo, "release/1")).not.toBeUndefined()
    }))

  it.effect("tags are not branches: a rule over ** leaves tag pushes alone", () =>
    Effect.gen(function*() {
      const { baseUrl, dir, git, repo } = yield* setup
      yield* createRule(baseUrl, repo, { branchPattern: "**" })
      yield* git.ok(["tag", "v1"], { cwd: dir })
      yield* git.ok(["push", "origin", "v1"], { cwd: dir })
      expect(yield* branchSha(baseUrl, repo, "main")).not.toBeUndefined()
    }))
})
