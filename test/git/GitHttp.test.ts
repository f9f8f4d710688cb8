import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
import { cloneUrl, gitClient, writeFiles } from "./gitClient.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string; readonly sql: SqlClient.SqlClient }>()(
  "test/git/GitHttpApp"
) {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl, sql: app.sql })))

let counter = 0
/** A fresh organization with a key and one repository. */
const newRepo = (options?: { visibility?: string; name?: string }) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestApp
    const slug = `git-${process.pid}-${++counter}`
    const org = yield* bootstrapOrg(baseUrl, { slug, plan: "enterprise" })
    const name = options?.name ?? "project"
    const created = yield* request(`${baseUrl}/api/v1/code/repos`, {
      method: "POST",
      token: org.key,
      body: { name, visibility: options?.visibility ?? "private" }
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    return {
      ...org,
      slug,
      name,
      url: cloneUrl(baseUrl, slug, name, org.key),
      anonymousUrl: cloneUrl(baseUrl, slug, name)
    }
  })

const branches = (org: string, repo: string, key: string) =>
  Effect.flatMap(
    TestApp,
    ({ baseUrl }) => request(`${baseUrl}/api/v1/code/repos/${org}/${repo}/branches`, { token: key })
  )

layer(TestAppLive, { excludeTestServices: true, timeout: "180 seconds" })("Git smart HTTP", (it) => {
  it.effect("clones an empty repository, pushes, and clones the same tree back", () =>
    Effect.gen(function*() {
      const git = yield* gitClient
      const repo = yield* newRepo()
      const empty = yield* git.run(["clone", repo.url, git.dir("empty")])
      expect(empty.code, empty.stderr).toBe(0)
      expect(empty.stderr).toContain("empty repository")

      const work = git.dir("empty")
      yield* writeFiles(work, { "README.md": "# Hello\n", "src/main.ts": "console.log(1)\n" })
      yield* git.ok(["add", "."], { cwd: work })
      yield* git.ok(["commit", "-m", "first commit"], { cwd: work })
      yield* git.ok(["push", "origin", "main"], { cwd: work })

      yield* git.ok(["clone", repo.url, git.dir("copy")])
      const original = yield* git.ok(["rev-parse", "HEAD^{tree}"], { cwd: work })
      const copied = yield* git.ok(["rev-parse", "HEAD^{tree}"], { cwd: git.dir("copy") })
      expect(copied).toBe(original)
      const listed = yield* branches(repo.slug, repo.name, repo.key)
      expect(listed.body.branches).toEqual([
        {
          name: "main",
          commitSha: (yield* git.ok(["rev-parse", "HEAD"], { cwd: work })).trim(),
          isDefault: true,
          protected: false
        }
      ])
    }))
})
