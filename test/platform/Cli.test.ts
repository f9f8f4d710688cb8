import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { adminToken, request, startApp } from "../support/app.ts"

const cli = (baseUrl: string, args: ReadonlyArray<string>) =>
  Effect.callback<{ code: number; stdout: string; stderr: string }>((resume) => {
    // The project's Node runs the TypeScript itself (it strips the types), as `npm run cli` does.
    execFile(
      "node_modules/.bin/node",
      ["src/cli.ts", "--url", baseUrl, "--token", adminToken, ...args],
      { timeout: 30_000 },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ code: error ? (error.code as number) ?? 1 : 0, stdout, stderr }))
    )
  })

describe("npm run cli", () => {
  it.live("bootstraps an organization, a user and a key like the admin API", () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const org = yield* cli(app.baseUrl, ["org", "create", "cli-org", "CLI Org", "--plan", "pro"])
      expect(org.code).toBe(0)
      expect(JSON.parse(org.stdout)).toMatchObject({ slug: "cli-org", plan: "pro", requestsPerMinute: 300 })

      const user = yield* cli(app.baseUrl, ["user", "add", "cli-org", "cleo", "cleo@example.com", "--role", "admin"])
      expect(JSON.parse(user.stdout)).toMatchObject({ username: "cleo", role: "admin" })

      const key = yield* cli(app.baseUrl, ["key", "create", "cli-org", "cleo", "monitors:read", "status:read"])
      const created = JSON.parse(key.stdout)
      expect(created.scopes).toEqual(["monitors:read", "status:read"])
      const me = yield* request(`${app.baseUrl}/api/v1/me`, { token: created.key })
      expect(me.body.user.username).toBe("cleo")

      const revoked = yield* cli(app.baseUrl, ["key", "revoke", created.id])
      expect(revoked.code).toBe(0)
      expect((yield* request(`${app.baseUrl}/api/v1/me`, { token: created.key })).status).toBe(401)

      const duplicate = yield* cli(app.baseUrl, ["org", "create", "cli-org", "Again"])
      expect(duplicate.code).not.toBe(0)
      expect(duplicate.stderr).toContain("Organization slug 'cli-org' is taken")
      expect(duplicate.stderr).not.toMatch(/\bat .*\.ts:\d+/)
    }).pipe(Effect.scoped), { timeout: 120_000 })

  it.live("with no arguments prints help with a description of each command and exits 0", () =>
    Effect.gen(function*() {
      const [help, keyHelp, unknown] = yield* Effect.all([
        cli("http://127.0.0.1:9", []),
        cli("http://127.0.0.1:9", ["key"]),
        cli("http://127.0.0.1:9", ["org", "bogus"])
      ], { concurrency: "unbounded" })
      expect(help.code).toBe(0)
      expect(help.stdout).toMatch(/org\s+Organizations: list, create, update/)
      expect(help.stdout).toMatch(/key\s+API keys: create, revoke/)
      expect(help.stderr).not.toContain("Help requested")
      expect(keyHelp.code).toBe(0)
      expect(keyHelp.stdout).toMatch(/revoke\s+Revoke an API key at once/)
      expect(unknown.code).toBe(1)
    }), { timeout: 120_000 })
})
