import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { adminToken, request, startApp } from "../support/app.ts"
import { cloneUrl, commit, createRepo, gitClient } from "./gitClient.ts"

it.effect(
  "locks files with git lfs lock, lists them, and lets only the owner (or --force) unlock",
  () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const repo = yield* createRepo(app.baseUrl, { slug: "locks", name: "media" })
      const admin = { token: adminToken, method: "POST" }
      yield* request(`${app.baseUrl}/api/v1/admin/orgs/locks/users`, {
        ...admin,
        body: { username: "bob", email: "bob@example.com", role: "member" }
      })
      const bob =
        (yield* request(`${app.baseUrl}/api/v1/admin/orgs/locks/keys`, { ...admin, body: { username: "bob" } }))
          .body.key as string

      const git = yield* gitClient
      yield* git.ok(["lfs", "install", "--skip-repo"])
      const work = git.dir("work")
      yield* git.ok(["init", "-q", work])
      yield* git.ok(["lfs", "track", "--lockable", "*.psd"], { cwd: work })
      yield* commit(git, work, { "design.psd": "layers" }, "design")
      yield* git.ok(["remote", "add", "origin", repo.url], { cwd: work })
      yield* git.ok(["push", "-q", "origin", "main"], { cwd: work })

      const locked = yield* git.run(["lfs", "lock", "design.psd"], { cwd: work })
      expect(locked.code, locked.stderr).toBe(0)
      const again = yield* git.run(["lfs", "lock", "design.psd"], { cwd: work })
      expect(again.code).not.toBe(0)
      const listed = yield* git.ok(["lfs", "locks"], { cwd: work })
      expect(listed).toMatch(/design\.psd\s+locks-owner/)

      // Bob, another member, sees the lock as someone else's and cannot unlock it without --force.
      const bobWork = git.dir("bob")
      yield* git.ok(["clone", "-q", cloneUrl(app.baseUrl, "locks", "media", bob), bobWork])
      const refused = yield* git.run(["lfs", "unlock", "design.psd"], { cwd: bobWork })
      expect(refused.code).not.toBe(0)
      expect(refused.stderr + refused.stdout).toContain("locks-owner")
      yield* git.ok(["lfs", "unlock", "--force", "design.psd"], { cwd: bobWork })
      expect((yield* git.ok(["lfs", "locks"], { cwd: work })).trim()).toBe("")

      // The owner locks again and unlocks it himself.
      yield* git.ok(["lfs", "lock", "design.psd"], { cwd: work })
      yield* git.ok(["lfs", "unlock", "design.psd"], { cwd: work })
      expect((yield* git.ok(["lfs", "locks"], { cwd: work })).trim()).toBe("")
    }),
  { timeout: 120_000 }
)
