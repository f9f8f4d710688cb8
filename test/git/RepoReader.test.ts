import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { bootstrapOrg, request, startApp } from "../support/app.ts"
import { cloneUrl, gitClient, writeFiles } from "./gitClient.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string }>()("test/git/RepoReaderApp") {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl })))

layer(TestAppLive, { excludeTestServices: true, timeout: "180 seconds" })("Repository read endpoints", (it) => {
  it.effect("reads trees, files and the commit log at a branch, a branch with slashes, a tag and a commit", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const org = yield* bootstrapOrg(baseUrl, { slug: "reader", plan: "enterprise" })
      const other = yield* bootstrapOrg(baseUrl, { slug: "reader-other", plan: "enterprise" })
      yield* request(`${baseUrl}/api/v1/code/repos`, { method: "POST", token: org.key, body: { name: "site" } })
      const git = yield* gitClient
      const work = git.dir("work")
      yield* git.ok(["init", "-q", work])
      const binary = Buffer.from([0, 1, 2, 255, 254, 0, 7])
      yield* writeFiles(work, { "README.md": "# Site\n", "src/index.ts": "export {}\n", "logo.bin": binary })
      yield* git.ok(["add", "-A"], { cwd: work })
      yield* git.ok(["commit", "-q", "-m", "initial"], { cwd: work })
      yield* git.ok(["tag", "v1"], { cwd: work })
      const first = (yield* git.ok(["rev-parse", "HEAD"], { cwd: work })).trim()
      yield* writeFiles(work, { "src/deep/util.ts": "export const x = 1\n" })
      yield* git.ok(["add", "-A"], { cwd: work })
      yield* git.ok(["commit", "-q", "-m", "add util\n\nwith a body"], { cwd: work })
      const second = (yield* git.ok(["rev-parse", "HEAD"], { cwd: work })).trim()
      yield* git.ok([
        "push",
        "-q",
        cloneUrl(baseUrl, "reader", "site", org.key),
        "main",
        "main:feature/deep/work",
        "v1"
      ], {
        cwd: work
      })
      const get = (path: string, key = org.key) =>
        request(`${baseUrl}/api/v1/code/repos/reader/site${path}`, { token: key })

      const root = yield* get("/tree/main")
      expect(root.status, JSON.stringify(root.body)).toBe(200)
      expect(root.body).toMatchObject({ ref: "main", commitSha: second, path: "" })
      expect(root.body.entries.map((e: any) => [e.name, e.type, e.size])).toEqual([
        ["README.md", "blob", 7],
        ["logo.bin", "blob", 7],
        ["src", "tree", null]
      ])
      const src = yield* get("/tree/feature/deep/work/src")
      expect(src.body).toMatchObject({ ref: "feature/deep/work", commitSha: second, path: "src" })
      expect(src.body.entries.map((e: any) => e.path)).toEqual(["src/deep", "src/index.ts"])
      const atTag = yield* get("/tree/v1/src")
      expect(atTag.body.entries.map((e: any) => e.name)).toEqual(["index.ts"])
      const atCommit = yield* get(`/tree/${first.slice(0, 10)}`)
      expect(atCommit.body.commitSha).toBe(first)

      const readme = yield* get("/blob/main/README.md")
      expect(readme.body).toMatchObject({ path: "README.md", size: 7, encoding: "utf-8", content: "# Site\n" })
      const logo = yield* get("/blob/main/logo.bin")
      expect(logo.body.encoding).toBe("base64")
      expect(Buffer.from(logo.body.content, "base64").equals(binary)).toBe(true)

      const log = yield* get("/commits?ref=main&limit=1")
      expect(log.status).toBe(200)
      expect(log.body.count).toBe(2)
      expect(log.body.commits).toHaveLength(1)
      expect(log.body.commits[0]).toMatchObject({
        sha: second,
        message: "add util\n\nwith a body",
        author: { name: "Ada Lovelace", email: "ada@example.com" },
        parents: [first]
      })
      expect((yield* get("/commits")).body.commits.map((c: any) => c.sha)).toEqual([second, first])

      for (
        const missing of [
          "/tree/main/nope",
          "/tree/nobranch",
          "/blob/main/src",
          "/blob/main/nope.txt",
          "/commits?ref=zzz"
        ]
      ) {
        const response = yield* get(missing)
        expect(response.status, missing).toBe(404)
        expect(response.body.error).toBe("not_found")
      }
      expect((yield* get("/commits?limit=0")).status).toBe(400)
      expect((yield* get("/tree/main", other.key)).status).toBe(404)
    }))
})
