import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { commit, gitClient } from "../git/gitClient.ts"
import { request, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { addMember, api, pushBranch, repoWithMain } from "./support.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string }>()("test/pulls/CodeReview") {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl })))

let counter = 0
const slug = () => `review-${process.pid}-${++counter}`

layer(TestAppLive, { excludeTestServices: true, timeout: "180 seconds" })("Code review on pull requests", (it) => {
  it.effect("an applied suggestion is a commit on the source branch; an outdated one is refused", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const { dir, repo } = yield* repoWithMain(git, baseUrl, slug(), { "app.txt": "a\nb\nc\n" })
      yield* pushBranch(git, dir, "feature", [{ "app.txt": "a\nB\nc\nd\n" }])
      const reviewer = yield* addMember(baseUrl, repo.slug, `rev-${counter}`)
      const pulls = api(baseUrl, repo)
      expect((yield* pulls.create({ title: "t", sourceBranch: "feature" })).status).toBe(201)
      yield* pulls.settled(1)
      const first = yield* pulls.comment(1, { body: "```suggestion\nbee\n```", path: "app.txt", line: 2 }, reviewer.key)
      const second = yield* pulls.comment(
        1,
        { body: "```suggestion\ndee\n```", path: "app.txt", line: 4 },
        reviewer.key
      )
      expect(first.status).toBe(201)
      const apply = (id: string) =>
        request(pulls.url(`/1/suggestions/${id}/apply`), { method: "POST", token: repo.key })
      const applied = yield* apply(first.body.suggestion.id)
      expect(applied.status).toBe(200)
      expect(applied.body.applied).toBe(true)

      yield* git.ok(["clone", "-q", "-b", "feature", repo.url, git.dir("fresh")])
      const log = yield* git.ok(["log", "-1", "--format=%H|%an|%cn"], { cwd: git.dir("fresh") })
      expect(log.trim()).toBe(`${applied.body.sha}|rev-${counter}|${repo.slug}-owner`)
      expect(yield* git.ok(["show", "HEAD:app.txt"], { cwd: git.dir("fresh") })).toBe("a\nbee\nc\nd\n")
      // The push moved the pull request's head.
      yield* eventually("head moved", pulls.get(1), (r) => r.body.headSha === applied.body.sha)
      // Applying twice: 409.
      expect((yield* apply(first.body.suggestion.id)).status).toBe(409)

      // Line 4 changes under the second suggestion: it is outdated.
      yield* git.ok(["pull", "-q", "origin", "feature"], { cwd: dir })
      yield* commit(git, dir, { "app.txt": "a\nbee\nc\nD!\n" }, "edit d")
      yield* git.ok(["push", "-q", "origin", "feature"], { cwd: dir })
      const outdated = yield* apply(second.body.suggestion.id)
      expect(outdated.status).toBe(409)
      expect(outdated.body.message).toMatch(/outdated/)
    }))

  it.effect("CODEOWNERS owners of changed files are requested on creation and on every push", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const s = slug()
      const { dir, repo } = yield* repoWithMain(git, baseUrl, s, {
        ".github/CODEOWNERS": `* @docs-${counter}\n/src/ @dev-${counter}\n/src/vendor/\n`,
        "README.md": "r\n"
      })
      yield* addMember(baseUrl, s, `docs-${counter}`)
      yield* addMember(baseUrl, s, `dev-${counter}`)
      yield* pushBranch(git, dir, "feature", [{ "src/app.ts": "x\n", "src/vendor/lib.js": "v\n" }])
      const pulls = api(baseUrl, repo)
      expect((yield* pulls.create({ title: "t", sourceBranch: "feature" })).status).toBe(201)
      // Last match wins: src/ → dev; src/vendor/ has no owners (unowned); README is not changed.
      const first = yield* eventually(
        "owners requested",
        pulls.get(1),
        (r) => r.body.requestedReviewers.length > 0 && r.body.mergeable !== null
      )
      expect(first.body.requestedReviewers).toEqual([`dev-${counter}`])
      yield* pushBranch(git, dir, "feature", [{ "docs.md": "d\n" }], "feature")
      const second = yield* eventually(
        "owners after the push",
        pulls.get(1),
        (r) => r.body.requestedReviewers.length === 2
      )
      expect(second.body.requestedReviewers).toEqual([`dev-${counter}`, `docs-${counter}`].sort())
    }))

  it.effect("`Fixes #n` in the title, body or commits closes those repository issues on merge", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const { dir, repo } = yield* repoWithMain(git, baseUrl, slug())
      const issues = `${baseUrl}/api/v1/code/repos/${repo.slug}/${repo.name}/issues`
      for (const title of ["one", "two", "three", "four"]) {
        expect((yield* request(issues, { method: "POST", token: repo.key, body: { title } })).status).toBe(201)
      }
      yield* git.ok(["checkout", "-q", "-b", "feature"], { cwd: dir })
      yield* commit(git, dir, { "x.txt": "x\n" }, "Resolves #3")
      yield* git.ok(["push", "-q", "origin", "feature"], { cwd: dir })
      const pulls = api(baseUrl, repo)
      const created = yield* pulls.create({ title: "Fix #1", body: "CLOSES #2, see #4", sourceBranch: "feature" })
      expect(created.body.number).toBe(5)
      expect((yield* pulls.merge(5)).status).toBe(200)
      const states = yield* Effect.forEach([1, 2, 3, 4], (n) => request(`${issues}/${n}`, { token: repo.key }))
      expect(states.map((r) => r.body.state)).toEqual(["closed", "closed", "closed", "open"])
      expect(states[0].body.closedBy).toMatchObject({ id: created.body.id, number: 5 })
    }))
})
