import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { Repositories } from "../../services/git/Repositories.ts"
import { CodeOwners } from "../../services/pulls/CodeOwners.ts"
import { commit, createRepo, gitClient } from "../git/gitClient.ts"
import { bootstrapOrg, request, startApp } from "../support/app.ts"

type Services = CodeOwners | Repositories
class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly context: Context.Context<Services>
}>()("test/pulls/CodeOwnersApp") {}
const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl, context: app.context as any }))
)

const forPaths = (orgSlug: string, branch: string, paths: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const repo = Option.getOrThrow(yield* (yield* Repositories).find(orgSlug, "r"))
    return yield* (yield* CodeOwners).forPaths(repo, branch, paths)
  })

layer(TestAppLive, { excludeTestServices: true, timeout: "180 seconds" })("CODEOWNERS", (it) => {
  it.effect("reads the pushed file of a branch: owners per path, and its errors through the API", () =>
    Effect.gen(function*() {
      const { baseUrl, context } = yield* TestApp
      const git = yield* gitClient
      const org = yield* createRepo(baseUrl, { slug: "owners" })
      const dir = git.dir("owners-work")
      yield* git.ok(["init", "-q", dir])
      yield* commit(git, dir, {
        ".github/CODEOWNERS": "* @ignored-because-root-file-comes-first\n",
        "CODEOWNERS": [
          "* @lead",
          "*.ts @ts-dev dev@example.com",
          "/docs/ @writer",
          "docs/generated/",
          "!vendor/ @nobody",
          "*.md bogus"
        ].join("\n"),
        "src/a.ts": "a\n",
        "docs/x.md": "x\n"
      }, "owners")
      yield* git.ok(["push", "-q", org.url, "main"], { cwd: dir })
      yield* git.ok(["checkout", "-q", "-b", "no-owners"], { cwd: dir })
      yield* git.ok(["rm", "-q", "CODEOWNERS", ".github/CODEOWNERS"], { cwd: dir })
      yield* git.ok(["commit", "-q", "-m", "drop owners"], { cwd: dir })
      yield* git.ok(["push", "-q", org.url, "no-owners"], { cwd: dir })

      const result = yield* Effect.provide(
        forPaths("owners", "main", ["src/a.ts", "README", "docs/x.md", "docs/generated/api.md"]),
        context
      )
      expect(Object.fromEntries(result.byPath)).toEqual({
        "src/a.ts": ["ts-dev", "dev@example.com"],
        "README": ["lead"],
        "docs/x.md": ["writer"],
        "docs/generated/api.md": []
      })
      expect(result.owners).toEqual(["ts-dev", "dev@example.com", "lead", "writer"])
      const none = yield* Effect.provide(forPaths("owners", "no-owners", ["src/a.ts"]), context)
      expect(none.owners).toEqual([])
      const ghost = yield* Effect.provide(forPaths("owners", "ghost", ["src/a.ts"]), context)
      expect(ghost.owners).toEqual([])

      const url = `${baseUrl}/api/v1/code/repos/owners/r/codeowners/errors`
      const errors = yield* request(url, { token: org.key })
      expect(errors.status).toBe(200)
      expect(errors.body.errors).toEqual([
        { line: 5, message: "Negation patterns are not supported", text: "!vendor/ @nobody" },
        {
          line: 6,
          message: "Invalid owner 'bogus': expected @username, @org/team or an e-mail address",
          text: "*.md bogus"
        }
      ])
      expect((yield* request(`${url}?ref=no-owners`, { token: org.key })).body).toEqual({ errors: [] })
      const missing = yield* request(`${url}?ref=nowhere`, { token: org.key })
      expect(missing.status).toBe(404)
      expect(missing.body.error).toBe("not_found")

      // Another organization's repository is not found; a key without code:read is refused.
      const other = yield* bootstrapOrg(baseUrl, { slug: "owners-other" })
      expect((yield* request(url, { token: other.key })).status).toBe(404)
      const limited = yield* bootstrapOrg(baseUrl, { slug: "owners-lim", scopes: ["monitors:read"] })
      const limitedUrl = `${baseUrl}/api/v1/code/repos/owners-lim/r/codeowners/errors`
      expect((yield* request(limitedUrl, { token: limited.key })).status).toBe(403)
    }))
})
