import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { bootstrapOrg, request, startApp } from "../support/app.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string }>()("test/git/RepositoriesApp") {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl })))

let orgCounter = 0
const newOrg = (options?: { role?: string; scopes?: ReadonlyArray<string> }) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestApp
    const slug = `repo-${process.pid}-${++orgCounter}`
    const org = yield* bootstrapOrg(baseUrl, { slug, plan: "enterprise", ...options })
    return { ...org, slug }
  })

const api = (path: string, init?: { method?: string; token?: string; body?: unknown }) =>
  Effect.flatMap(TestApp, ({ baseUrl }) => request(`${baseUrl}/api/v1/code/repos${path}`, init))

layer(TestAppLive, { excludeTestServices: true, timeout: "120 seconds" })("Repositories API", (it) => {
  it.effect("creates with defaults, refuses a duplicate name, lists, reads and updates", () =>
    Effect.gen(function*() {
      const { key, slug } = yield* newOrg()
      const created = yield* api("", { method: "POST", token: key, body: { name: "Web-App", description: "site" } })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      expect(created.body).toMatchObject({
        name: "Web-App",
        slug: "web-app",
        fullName: `${slug}/web-app`,
        description: "site",
        visibility: "private",
        defaultBranch: "main",
        allowForking: false,
        archived: false,
        storageBytes: 0
      })
      expect(created.body.id).toMatch(/^repo_/)
      expect(created.body.cloneUrl).toMatch(new RegExp(`/${slug}/web-app\\.git$`))

      const duplicate = yield* api("", { method: "POST", token: key, body: { name: "web-app" } })
      expect(duplicate.status).toBe(409)
      expect(duplicate.body.error).toBe("conflict")

      yield* api("", {
        method: "POST",
        token: key,
        body: { name: "second", visibility: "public", defaultBranch: "trunk" }
      })
      const list = yield* api("", { token: key })
      expect(list.status).toBe(200)
      expect(list.body.count).toBe(2)
      expect(list.body.repositories.map((r: any) => r.name)).toEqual(["second", "Web-App"])

      const got = yield* api(`/${slug}/web-app`, { token: key })
      expect(got.status).toBe(200)
      expect(got.body.id).toBe(created.body.id)

      const patched = yield* api(`/${slug}/web-app`, {
        method: "PATCH",
        token: key,
        body: { description: null, visibility: "public", defaultBranch: "develop", allowForking: true }
      })
      expect(patched.status, JSON.stringify(patched.body)).toBe(200)
      expect(patched.body).toMatchObject({
        description: null,
        visibility: "public",
        defaultBranch: "develop",
        allowForking: true
      })
    }))

  it.effect("validates names and bodies with the error model", () =>
    Effect.gen(function*() {
      const { key } = yield* newOrg()
      for (const name of ["", "has space", "-dash", "x.git", "a/b"]) {
        const response = yield* api("", { method: "POST", token: key, body: { name } })
        expect(response.status, name).toBe(400)
        expect(response.body.error).toBe("validation_error")
      }
      const badVisibility = yield* api("", { method: "POST", token: key, body: { name: "ok", visibility: "secret" } })
      expect(badVisibility.status).toBe(400)
      const badBranch = yield* api("", { method: "POST", token: key, body: { name: "ok", defaultBranch: "a..b" } })
      expect(badBranch.status).toBe(400)
    }))

  it.effect("deletes into the trash (204, then 404, name free again)", () =>
    Effect.gen(function*() {
      const { key, slug } = yield* newOrg()
      yield* api("", { method: "POST", token: key, body: { name: "gone" } })
      const removed = yield* api(`/${slug}/gone`, { method: "DELETE", token: key })
      expect(removed.status).toBe(204)
      expect(removed.body).toBeUndefined()
      expect((yield* api(`/${slug}/gone`, { token: key })).status).toBe(404)
      expect((yield* api("", { token: key })).body.count).toBe(0)
      expect((yield* api("", { method: "POST", token: key, body: { name: "gone" } })).status).toBe(201)
    }))

  it.effect("answers 404 for another organization's repository and checks scopes", () =>
    Effect.gen(function*() {
      const owner = yield* newOrg()
      const other = yield* newOrg()
      yield* api("", { method: "POST", token: owner.key, body: { name: "secret" } })
      for (const method of ["GET", "PATCH", "DELETE"]) {
        const response = yield* api(`/${owner.slug}/secret`, {
          method,
          token: other.key,
          ...(method === "PATCH" ? { body: { description: "x" } } : {})
        })
        expect(response.status, method).toBe(404)
        expect(response.body.error).toBe("not_found")
      }
      expect((yield* api(`/${owner.slug}/secret/branches`, { token: other.key })).status).toBe(404)

      const reader = yield* newOrg({ scopes: ["code:read"] })
      const refused = yield* api("", { method: "POST", token: reader.key, body: { name: "nope" } })
      expect(refused.status).toBe(403)
      const member = yield* newOrg({ role: "member" })
      yield* api("", { method: "POST", token: member.key, body: { name: "mine" } })
      expect((yield* api(`/${member.slug}/mine`, { method: "DELETE", token: member.key })).status).toBe(403)
    }))

  it.effect("lists no branches or tags for an empty repository", () =>
    Effect.gen(function*() {
      const { key, slug } = yield* newOrg()
      yield* api("", { method: "POST", token: key, body: { name: "empty" } })
      expect((yield* api(`/${slug}/empty/branches`, { token: key })).body).toEqual({ branches: [], count: 0 })
      expect((yield* api(`/${slug}/empty/tags`, { token: key })).body).toEqual({ tags: [], count: 0 })
    }))

  it.effect("documents the code endpoints in the OpenAPI document", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const openapi = yield* request(`${baseUrl}/openapi.json`)
      expect(openapi.status).toBe(200)
      const paths = Object.keys(openapi.body.paths)
      for (
        const path of [
          "/api/v1/code/repos",
          "/api/v1/code/repos/{org}/{repo}",
          "/api/v1/code/repos/{org}/{repo}/branches"
        ]
      ) {
        expect(paths).toContain(path)
      }
      expect(paths.some((path) => path.startsWith("/api/v1/code/repos/{org}/{repo}/tree/"))).toBe(true)
    }))
})
