import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { gitClient } from "../git/gitClient.ts"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
import { api, pushBranch, repoWithMain } from "./support.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string }>()("test/pulls/PullRequestsApi") {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl })))

let counter = 0
const slug = () => `prs-${process.pid}-${++counter}`

layer(TestAppLive, { excludeTestServices: true, timeout: "180 seconds" })("Pull requests API", (it) => {
  it.effect("create, list by state, get, PATCH every field, close and reopen", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const { dir, repo } = yield* repoWithMain(git, baseUrl, slug())
      const head = yield* pushBranch(git, dir, "feature", [{ "a.txt": "a\n" }])
      yield* pushBranch(git, dir, "other", [{ "b.txt": "b\n" }])
      const pulls = api(baseUrl, repo)

      const created = yield* pulls.create({ title: "Add a", body: "Fixes things", sourceBranch: "feature" })
      expect(created.status).toBe(201)
      expect(created.body).toMatchObject({
        number: 1,
        title: "Add a",
        body: "Fixes things",
        state: "open",
        isDraft: false,
        sourceBranch: "feature",
        targetBranch: "main",
        headSha: head,
        mergedAt: null,
        mergedBy: null,
        mergeCommitSha: null,
        labels: [],
        requestedReviewers: []
      })
      expect(created.body.id).toMatch(/^pr_/)
      expect(created.body.author.username).toBe(`${repo.slug}-owner`)
      expect([null, true]).toContain(created.body.mergeable)

      const draft = yield* pulls.create({ title: "Draft", sourceBranch: "other", isDraft: true })
      expect(draft.status).toBe(201)
      expect(draft.body).toMatchObject({ number: 2, state: "draft", isDraft: true, body: "" })

      // The same open pair again: 409.
      const again = yield* pulls.create({ title: "Again", sourceBranch: "feature", targetBranch: "main" })
      expect(again.status).toBe(409)
      expect(again.body.error).toBe("conflict")

      const settled = yield* pulls.settled(1)
      expect(settled.body.mergeable).toBe(true)
      expect(settled.body.mergeableState).toBe("clean")

      const open = yield* request(pulls.url("?state=open"), { token: repo.key })
      expect(open.body.pullRequests.map((p: any) => p.number)).toEqual([1])
      expect(open.body.count).toBe(1)
      const drafts = yield* request(pulls.url("?state=draft"), { token: repo.key })
      expect(drafts.body.pullRequests.map((p: any) => p.number)).toEqual([2])
      const all = yield* request(pulls.url(), { token: repo.key })
      expect(all.body.pullRequests.map((p: any) => p.number)).toEqual([2, 1])

      const patched = yield* pulls.patch(1, { title: "Add a file", body: "New body", isDraft: true })
      expect(patched.status).toBe(200)
      expect(patched.body).toMatchObject({ title: "Add a file", body: "New body", state: "draft", isDraft: true })
      const ready = yield* pulls.patch(1, { isDraft: false })
      expect(ready.body.state).toBe("open")

      const closed = yield* pulls.patch(1, { state: "closed" })
      expect(closed.body.state).toBe("closed")
      expect(closed.body.closedAt).not.toBeNull()
      expect((yield* request(pulls.url("?state=closed"), { token: repo.key })).body.count).toBe(1)
      // A closed pair frees the pair: a new request may be opened, and the old one cannot reopen then.
      const reopened = yield* pulls.patch(1, { state: "open" })
      expect(reopened.body).toMatchObject({ state: "open", closedAt: null })
      const merge = yield* pulls.merge(1)
      expect(merge.status).toBe(200)
      const mergedPatch = yield* pulls.patch(1, { state: "open" })
      expect(mergedPatch.status).toBe(409)
    }))

  it.effect("the repository setting stalePullRequests: defaults, PATCH, validation", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const { repo } = yield* repoWithMain(git, baseUrl, slug())
      const url = `${baseUrl}/api/v1/code/repos/${repo.slug}/${repo.name}`
      const read = yield* request(url, { token: repo.key })
      expect(read.body.stalePullRequests).toEqual({ enabled: true, warnAfterDays: 30, closeAfterDays: 90 })
      const patched = yield* request(url, {
        method: "PATCH",
        token: repo.key,
        body: { stalePullRequests: { enabled: false, warnAfterDays: 10 } }
      })
      expect(patched.status).toBe(200)
      expect(patched.body.stalePullRequests).toEqual({ enabled: false, warnAfterDays: 10, closeAfterDays: 90 })
      const inverted = yield* request(url, {
        method: "PATCH",
        token: repo.key,
        body: { stalePullRequests: { closeAfterDays: 5 } }
      })
      expect(inverted.status).toBe(400)
      expect(inverted.body.error).toBe("validation_error")
      const zero = yield* request(url, {
        method: "PATCH",
        token: repo.key,
        body: { stalePullRequests: { warnAfterDays: 0 } }
      })
      expect(zero.status).toBe(400)
    }))

  it.effect("validation: unknown source branch names it, bad bodies are 400, unknown numbers 404", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const { repo } = yield* repoWithMain(git, baseUrl, slug())
      const pulls = api(baseUrl, repo)
      const missing = yield* pulls.create({ title: "x", sourceBranch: "nope" })
      expect(missing.status).toBe(400)
      expect(missing.body.error).toBe("validation_error")
      expect(missing.body.message).toContain("nope")
      expect((yield* pulls.create({ sourceBranch: "main" })).status).toBe(400)
      expect((yield* pulls.create({ title: "", sourceBranch: "main" })).status).toBe(400)
      expect((yield* pulls.create({ title: "x", sourceBranch: "main", extra: 1 })).status).toBe(400)
      // A GitHub-style body: the answer says what Canopy calls head and base.
      for (
        const body of [{ title: "x", head: "feature", base: "main" }, { title: "x", sourceBranch: "f", base: "main" }]
      ) {
        const github = yield* pulls.create(body)
        expect(github.status).toBe(400)
        expect(github.body.error).toBe("validation_error")
        expect(github.body.message).toContain("sourceBranch")
        expect(github.body.message).toContain("targetBranch")
      }
      expect((yield* pulls.get(99)).status).toBe(404)
      expect((yield* request(pulls.url("/abc"), { token: repo.key })).status).toBe(400)
      expect((yield* pulls.patch(99, { title: "x" })).status).toBe(404)
      expect((yield* pulls.patch(1, { state: "merged" })).status).toBe(400)
    }))

  it.effect("another organization's pull requests are 404", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const { dir, repo } = yield* repoWithMain(git, baseUrl, slug())
      yield* pushBranch(git, dir, "feature", [{ "a.txt": "a\n" }])
      expect((yield* api(baseUrl, repo).create({ title: "t", sourceBranch: "feature" })).status).toBe(201)
      const stranger = yield* bootstrapOrg(baseUrl, { slug: slug() })
      const theirs = api(baseUrl, { ...repo, key: stranger.key })
      expect((yield* theirs.get(1)).status).toBe(404)
      expect((yield* request(theirs.url(), { token: stranger.key })).status).toBe(404)
      expect((yield* theirs.merge(1)).status).toBe(404)
      expect((yield* theirs.patch(1, { title: "x" })).status).toBe(404)
      expect((yield* theirs.create({ title: "t", sourceBranch: "feature" })).status).toBe(404)
    }))

  it.effect("files and diff against the merge base; inline comments only on lines of the diff", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const { dir, repo } = yield* repoWithMain(git, baseUrl, slug(), {
        "src/app.ts": "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n",
        "old.txt": "old\n"
      })
      yield* git.ok(["checkout", "-q", "-b", "feature"], { cwd: dir })
      yield* git.ok(["rm", "-q", "old.txt"], { cwd: dir })
      yield* pushBranch(git, dir, "feature", [{
        "src/app.ts": "one\ntwo\nthree\nfour\nFIVE\nsix\nseven\neight\nnine\nten\n",
        "new.txt": "new\n"
      }], "feature")
      // main moves on: the diff stays against the merge base.
      yield* pushBranch(git, dir, "main", [{ "main-only.txt": "m\n" }])
      const pulls = api(baseUrl, repo)
      expect((yield* pulls.create({ title: "t", sourceBranch: "feature" })).status).toBe(201)
      yield* pulls.settled(1)
      const files = yield* request(pulls.url("/1/files"), { token: repo.key })
      expect(files.status).toBe(200)
      const byPath = Object.fromEntries(files.body.files.map((f: any) => [f.path, f]))
      expect(Object.keys(byPath).sort()).toEqual(["new.txt", "old.txt", "src/app.ts"])
      expect(byPath["new.txt"]).toMatchObject({ status: "added", additions: 1, deletions: 0 })
      expect(byPath["old.txt"]).toMatchObject({ status: "removed", additions: 0, deletions: 1 })
      expect(byPath["src/app.ts"]).toMatchObject({ status: "modified", additions: 1, deletions: 1 })
      expect(byPath["src/app.ts"].patch).toContain("+FIVE")
      const diff = yield* Effect.promise(() =>
        fetch(pulls.url("/1/diff"), { headers: { authorization: `Bearer ${repo.key}` } }).then(async (r) => ({
          type: r.headers.get("content-type"),
          text: await r.text()
        }))
      )
      expect(diff.type).toContain("text/x-diff")
      expect(diff.text).toContain("diff --git a/src/app.ts b/src/app.ts")
      expect(diff.text).not.toContain("main-only.txt")

      const general = yield* pulls.comment(1, { body: "Looks good" })
      expect(general.status).toBe(201)
      expect(general.body).toMatchObject({ body: "Looks good", path: null, line: null })
      const inline = yield* pulls.comment(1, { body: "Why caps?", path: "src/app.ts", line: 5 })
      expect(inline.status).toBe(201)
      expect(inline.body).toMatchObject({ path: "src/app.ts", line: 5 })
      // Line 1 is outside every hunk; removed files have no new side; unknown paths are not in the diff.
      for (
        const body of [
          { body: "x", path: "src/app.ts", line: 1 },
          { body: "x", path: "old.txt", line: 1 },
          { body: "x", path: "nope.txt", line: 1 }
        ]
      ) {
        const refused = yield* pulls.comment(1, body)
        expect(refused.status).toBe(422)
        expect(refused.body.error).toBe("validation_error")
      }
      expect((yield* pulls.comment(1, { body: "x", path: "src/app.ts" })).status).toBe(400)

      const suggested = yield* pulls.comment(1, {
        body: "Lowercase:\n```suggestion\nfive\n```",
        path: "src/app.ts",
        line: 5
      })
      expect(suggested.status).toBe(201)
      expect(suggested.body.suggestion).toMatchObject({
        path: "src/app.ts",
        startLine: 5,
        endLine: 5,
        originalLines: ["FIVE"],
        replacement: "five",
        state: "open"
      })
      expect(suggested.body.suggestion.id).toMatch(/^sug_/)
      const listed = yield* request(pulls.url("/1/comments"), { token: repo.key })
      expect(listed.body.count).toBe(3)
    }))
})
