import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { Conflict } from "../../schemas/platform/Errors.ts"
import { Transfers } from "../../services/git/Transfers.ts"
import { adminToken, bootstrapOrg, request, startApp } from "../support/app.ts"
import { createRepo, gitClient, pushedWorkTree } from "./gitClient.ts"

/**
 * Transfers (GUIDE §16): who may ask and decide, the name and storage checks at the request
 * and at acceptance, and the 7 days after which a pending transfer is `expired` (TestClock).
 */
class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly sql: SqlClient.SqlClient
  readonly transfers: Transfers["Service"]
}>()("test/git/Transfers") {}
const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(startApp(), (app) => ({
    baseUrl: app.baseUrl,
    sql: app.sql,
    transfers: Context.get(app.context, Transfers)
  }))
)

let counter = 0
const slug = (name: string) => `${name}-${process.pid}-${++counter}`
const code = (baseUrl: string, tail: string) => `${baseUrl}/api/v1/code${tail}`
const admin = { token: adminToken }

/** A source organization with repository `r`, and a target where the same user has `role` (and a key). */
const twoOrgs = (role: "owner" | "admin" | "member", targetPlan = "enterprise") =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestApp
    const repo = yield* createRepo(baseUrl, { slug: slug("src") })
    const target = slug("dst")
    yield* request(`${baseUrl}/api/v1/admin/orgs`, {
      ...admin,
      method: "POST",
      body: { slug: target, name: "T", plan: targetPlan }
    })
    const username = `${repo.slug}-owner`
    yield* request(`${baseUrl}/api/v1/admin/orgs/${target}/users`, {
      ...admin,
      method: "POST",
      body: { username, email: `${username}@example.com`, role }
    })
    const key = yield* request(`${baseUrl}/api/v1/admin/orgs/${target}/keys`, {
      ...admin,
      method: "POST",
      body: {
        username,
        scopes: ["code:read", "code:write", "code:admin"].filter((s) => role !== "member" || s !== "code:admin")
      }
    })
    const ask = () =>
      request(code(baseUrl, `/repos/${repo.slug}/r/transfer`), {
        method: "POST",
        token: repo.key,
        body: { targetOrg: target }
      })
    const decide = (id: string, what: "accept" | "decline", token = key.body.key as string) =>
      request(code(baseUrl, `/transfers/${id}/${what}`), { method: "POST", token })
    return { repo, target, targetKey: key.body.key as string, ask, decide }
  })

layer(TestAppLive, { excludeTestServices: true, timeout: "120 seconds" })("Repository transfers", (it) => {
  it.effect("a member of the target gets 403; an organization the user is not in gets 404", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const t = yield* twoOrgs("member")
      const asked = yield* t.ask()
      expect(asked.status).toBe(403)
      const stranger = yield* bootstrapOrg(baseUrl, { slug: slug("stranger") })
      const elsewhere = yield* request(code(baseUrl, `/repos/${t.repo.slug}/r/transfer`), {
        method: "POST",
        token: t.repo.key,
        body: { targetOrg: stranger.org.slug }
      })
      expect(elsewhere.status).toBe(404)
    }))

  it.effect("the name is checked at the request and again at acceptance; declining leaves the repository", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const t = yield* twoOrgs("admin")
      const taken = yield* request(code(baseUrl, "/repos"), { method: "POST", token: t.targetKey, body: { name: "r" } })
      expect(taken.status).toBe(201)
      expect((yield* t.ask()).status).toBe(409)
      yield* request(code(baseUrl, `/repos/${t.target}/r`), { method: "DELETE", token: t.targetKey })
      const asked = yield* t.ask()
      expect(asked.status).toBe(201)
      // A second request while one is pending: 409.
      expect((yield* t.ask()).status).toBe(409)
      // The target takes the name again before accepting.
      yield* request(code(baseUrl, "/repos"), { method: "POST", token: t.targetKey, body: { name: "r" } })
      const refused = yield* t.decide(asked.body.id, "accept")
      expect(refused.status).toBe(409)
      expect(refused.body.message).toContain("named 'r'")
      const declined = yield* t.decide(asked.body.id, "decline")
      expect(declined.body.state).toBe("declined")
      expect((yield* request(code(baseUrl, `/repos/${t.repo.slug}/r`), { token: t.repo.key })).status).toBe(200)
      expect((yield* t.decide(asked.body.id, "accept")).status).toBe(409)
    }))

  it.effect("refused at acceptance when the target lacks the storage", () =>
    Effect.gen(function*() {
      const { sql } = yield* TestApp
      const t = yield* twoOrgs("owner")
      const git = yield* gitClient
      yield* pushedWorkTree(git, t.repo.url)
      const asked = yield* t.ask()
      expect(asked.status).toBe(201)
      yield* sql`UPDATE organizations SET storage_limit_bytes = 0 WHERE slug = ${t.target}`.pipe(Effect.orDie)
      const refused = yield* t.decide(asked.body.id, "accept")
      expect(refused.status).toBe(409)
      expect(refused.body.message).toContain("storage")
    }))

  it.effect("a transfer not accepted within 7 days is expired (TestClock)", () =>
    Effect.gen(function*() {
      const { sql, transfers } = yield* TestApp
      const t = yield* twoOrgs("admin")
      const rows = yield* sql`
        SELECT o.id AS from_id, d.id AS to_id, u.id AS user_id FROM organizations o, organizations d, users u
        WHERE o.slug = ${t.repo.slug} AND d.slug = ${t.target} AND u.username = ${`${t.repo.slug}-owner`}`.pipe(
        Effect.orDie
      )
      const ids = rows[0] as { from_id: string; to_id: string; user_id: string }
      const source = { userId: ids.user_id, orgId: ids.from_id, role: "owner" as const }
      const target = { userId: ids.user_id, orgId: ids.to_id, role: "admin" as const }
      yield* Effect.gen(function*() {
        yield* TestClock.setTime(Date.now())
        const requested = yield* transfers.request(source, "r", t.target)
        expect(requested.state).toBe("pending")
        yield* TestClock.adjust("6 days")
        expect((yield* transfers.list(ids.to_id)).transfers[0].state).toBe("pending")
        yield* TestClock.adjust("1 day")
        expect((yield* transfers.list(ids.to_id)).transfers[0].state).toBe("expired")
        const late = yield* Effect.flip(transfers.accept(target, requested.id))
        expect(late).toBeInstanceOf(Conflict)
        expect(late.message).toContain("expired")
        // Expired, the repository may be asked for again.
        expect((yield* transfers.request(source, "r", t.target)).state).toBe("pending")
      }).pipe(Effect.provide(TestClock.layer()))
      const expired = yield* sql`SELECT id FROM repo_transfers WHERE state = 'expired' AND repo_id = ${t.repo.id}`
        .pipe(Effect.orDie)
      expect(expired.length).toBe(1)
    }))
})
