import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { adminToken, bootstrapOrg, request, startApp } from "../support/app.ts"

describe("API keys", () => {
  it.live("are stored hashed: the secret is nowhere in the database", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const { key, keyId } = yield* bootstrapOrg(app.baseUrl, { slug: "hashed" })
      expect(key).toMatch(/^cnp_[A-Za-z0-9]{40}$/)
      const rows = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<any>`SELECT * FROM api_keys WHERE id = ${keyId}`
      }).pipe(Effect.provideService(SqlClient.SqlClient, app.sql))
      expect(rows).toHaveLength(1)
      expect(JSON.stringify(rows[0])).not.toContain(key)
      expect(rows[0].secret_hash).toBe(createHash("sha256").update(key).digest("hex"))
      const me = yield* request(`${app.baseUrl}/api/v1/me`, { token: key })
      expect(me.status).toBe(200)
      expect(me.body.org.slug).toBe("hashed")
      expect(me.body.user.role).toBe("owner")
    }).pipe(Effect.scoped))

  it.live("a revoked key fails at once, and lastUsedAt is recorded", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const { key, keyId } = yield* bootstrapOrg(app.baseUrl, { slug: "revoked" })
      expect((yield* request(`${app.baseUrl}/api/v1/me`, { token: key })).status).toBe(200)
      const revoke = yield* request(`${app.baseUrl}/api/v1/admin/keys/${keyId}`, {
        method: "DELETE",
        token: adminToken
      })
      expect(revoke.status).toBe(204)
      expect(revoke.body).toBeUndefined()
      const after = yield* request(`${app.baseUrl}/api/v1/me`, { token: key })
      expect(after.status).toBe(401)
      expect(after.body.error).toBe("unauthorized")
      const missing = yield* request(`${app.baseUrl}/api/v1/admin/keys/key_nope`, {
        method: "DELETE",
        token: adminToken
      })
      expect(missing.status).toBe(404)
    }).pipe(Effect.scoped))

  it.live("scopes are enforced and limited by role", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const reader = yield* bootstrapOrg(app.baseUrl, { slug: "scoped", scopes: ["monitors:read"] })
      const me = yield* request(`${app.baseUrl}/api/v1/me`, { token: reader.key })
      expect(me.body.scopes).toEqual(["monitors:read"])
      const denied = yield* request(`${app.baseUrl}/api/v1/org/keys`, { token: reader.key })
      expect(denied.status).toBe(403)
      expect(denied.body).toEqual({ error: "forbidden", message: expect.stringContaining("org:admin") })

      // A member cannot be given org:admin, and a key without scopes gets its role's.
      const member = yield* request(`${app.baseUrl}/api/v1/admin/orgs/scoped/users`, {
        method: "POST",
        token: adminToken,
        body: { username: "mia", email: "mia@example.com" }
      })
      expect(member.body.role).toBe("member")
      const tooMuch = yield* request(`${app.baseUrl}/api/v1/admin/orgs/scoped/keys`, {
        method: "POST",
        token: adminToken,
        body: { username: "mia", scopes: ["org:admin"] }
      })
      expect(tooMuch.status).toBe(403)
      const defaults = yield* request(`${app.baseUrl}/api/v1/admin/orgs/scoped/keys`, {
        method: "POST",
        token: adminToken,
        body: { username: "mia" }
      })
      expect(defaults.status).toBe(201)
      expect(defaults.body.scopes).not.toContain("org:admin")
      expect(defaults.body.scopes).not.toContain("code:admin")
      expect(defaults.body.scopes).toContain("monitors:write")
    }).pipe(Effect.scoped))

  it.live("one organization's key gets 404 on another's resources", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const a = yield* bootstrapOrg(app.baseUrl, { slug: "org-a" })
      const b = yield* bootstrapOrg(app.baseUrl, { slug: "org-b" })
      const listA = yield* request(`${app.baseUrl}/api/v1/org/keys`, { token: a.key })
      expect(listA.body.keys.map((k: any) => k.id)).toEqual([a.keyId])
      const cross = yield* request(`${app.baseUrl}/api/v1/org/keys/${b.keyId}`, { method: "DELETE", token: a.key })
      expect(cross.status).toBe(404)
      expect(cross.body.error).toBe("not_found")
      expect((yield* request(`${app.baseUrl}/api/v1/me`, { token: b.key })).status).toBe(200)
    }).pipe(Effect.scoped))

  it.live("the admin API needs the admin token", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const { key } = yield* bootstrapOrg(app.baseUrl, { slug: "adminless" })
      for (const token of [undefined, "wrong", key]) {
        const response = yield* request(`${app.baseUrl}/api/v1/admin/orgs`, {
          method: "POST",
          ...(token ? { token } : {}),
          body: { slug: "sneaky", name: "Sneaky" }
        })
        expect(response.status).toBe(401)
      }
      const duplicate = yield* request(`${app.baseUrl}/api/v1/admin/orgs`, {
        method: "POST",
        token: adminToken,
        body: { slug: "adminless", name: "Again" }
      })
      expect(duplicate.status).toBe(409)
      expect(duplicate.body.error).toBe("conflict")
    }).pipe(Effect.scoped))
})
