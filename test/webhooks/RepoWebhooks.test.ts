import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { verifyHubSignature } from "../../services/webhooks/Signature.ts"
import { commit, createRepo, gitClient } from "../git/gitClient.ts"
import { request, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { startReceiver } from "./receiver.ts"

describe("repository webhooks", () => {
  it.live(
    "a real git push reaches a real receiver as a signed push payload with the spec's fields",
    () =>
      Effect.gen(function*() {
        const receiver = yield* startReceiver()
        const app = yield* startApp()
        const git = yield* gitClient
        const repo = yield* createRepo(app.baseUrl, { slug: "hooked", plan: "free" })
        const secret = "push-secret"
        const created = yield* request(`${app.baseUrl}/api/v1/code/repos/hooked/r/webhooks`, {
          method: "POST",
          token: repo.key,
          body: { url: receiver.url("/push"), secret, events: ["push"] }
        })
        expect(created.status).toBe(201)

        const dir = git.dir("work")
        yield* git.ok(["init", "-q", dir])
        const first = yield* commit(git, dir, { "a.txt": "a\n" }, "first\n\nwith a body")
        const second = yield* commit(git, dir, { "b.txt": "b\n" }, "second")
        yield* git.ok(["push", "-q", repo.url, "main"], { cwd: dir })

        const [delivered] = yield* eventually(
          "the push delivery",
          Effect.sync(() => receiver.on("/push")),
          (received) => received.length >= 1,
          { timeoutMs: 60_000 }
        )
        expect(delivered.headers["x-service-event"]).toBe("push")
        expect(verifyHubSignature(secret, delivered.body, String(delivered.headers["x-service-signature"]))).toBe(true)
        const payload = JSON.parse(delivered.body.toString("utf8"))
        expect(Object.keys(payload).sort()).toEqual(
          ["after", "before", "commits", "event", "ref", "repository", "sender", "timestamp"]
        )
        expect(payload).toMatchObject({
          event: "push",
          repository: { id: repo.id, name: "r", fullName: "hooked/r" },
          sender: { id: repo.user.id, name: "hooked-owner", email: "hooked-owner@example.com" },
          ref: "refs/heads/main",
          before: "0".repeat(40),
          after: second
        })
        expect(payload.commits).toEqual([
          {
            sha: first,
            message: "first\n\nwith a body",
            author: { name: "Ada Lovelace", email: "ada@example.com" },
            timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/)
          },
          {
            sha: second,
            message: "second",
            author: { name: "Ada Lovelace", email: "ada@example.com" },
            timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/)
          }
        ])
        expect(Number.isNaN(Date.parse(payload.timestamp))).toBe(false)
      }),
    { timeout: 180_000 }
  )

  it.live(
    "manages webhooks per repository: counts per plan, ping with the repository, cross-organization 404",
    () =>
      Effect.gen(function*() {
        const receiver = yield* startReceiver()
        const app = yield* startApp()
        const repo = yield* createRepo(app.baseUrl, { slug: "acme", plan: "free" })
        const other = yield* createRepo(app.baseUrl, { slug: "other", plan: "free" })
        const api = (path: string, init?: { method?: string; body?: unknown }, token = repo.key) =>
          request(`${app.baseUrl}/api/v1/code/repos${path}`, { ...init, token })

        const ids: Array<string> = []
        for (const n of [1, 2, 3]) {
          const made = yield* api("/acme/r/webhooks", {
            method: "POST",
            body: { url: receiver.url(`/hook${n}`), events: ["push", "create"] }
          })
          expect(made.status).toBe(201)
          ids.push(made.body.id as string)
        }
        const fourth = yield* api("/acme/r/webhooks", { method: "POST", body: { url: receiver.url(), events: ["*"] } })
        expect(fourth.status).toBe(403)
        expect(fourth.body).toMatchObject({ error: "plan_required", requiredPlan: "pro" })
        // Repository events only; organization events are refused.
        const orgEvent = yield* api("/acme/r/webhooks", {
          method: "POST",
          body: { url: receiver.url(), events: ["monitor.down"] }
        })
        expect(orgEvent.status).toBe(400)
        // The count is per repository: a second repository of the organization has its own three.
        yield* request(`${app.baseUrl}/api/v1/code/repos`, { method: "POST", token: repo.key, body: { name: "s" } })
        const onSecond = yield* api("/acme/s/webhooks", {
          method: "POST",
          body: { url: receiver.url(), events: ["*"] }
        })
        expect(onSecond.status).toBe(201)
        const listed = yield* api("/acme/r/webhooks")
        expect(listed.status).toBe(200)
        expect(listed.body.count).toBe(3)
        expect((yield* api(`/acme/s/webhooks/${ids[0]}`)).status).toBe(404)

        const patched = yield* api(`/acme/r/webhooks/${ids[1]}`, { method: "PATCH", body: { isActive: false } })
        expect(patched.body).toMatchObject({ isActive: false })
        expect((yield* api(`/acme/r/webhooks/${ids[2]}`, { method: "DELETE" })).status).toBe(204)

        const pinged = yield* api(`/acme/r/webhooks/${ids[0]}/test`, { method: "POST" })
        expect(pinged.status).toBe(202)
        const [ping] = yield* eventually(
          "the ping",
          Effect.sync(() => receiver.on("/hook1")),
          (received) => received.length >= 1,
          { timeoutMs: 60_000 }
        )
        expect(JSON.parse(ping.body.toString("utf8"))).toMatchObject({
          event: "ping",
          hookId: ids[0],
          repository: { id: repo.id, name: "r", fullName: "acme/r" }
        })
        const deliveryId = pinged.body.delivery.id as string
        yield* eventually(
          "the ping logged",
          api(`/acme/r/webhooks/${ids[0]}/deliveries/${deliveryId}`),
          (read) => read.status === 200 && read.body.status === "success",
          { timeoutMs: 60_000 }
        )
        expect((yield* api(`/acme/r/webhooks/${ids[0]}/deliveries`)).body.count).toBe(1)
        const again = yield* api(`/acme/r/webhooks/${ids[0]}/deliveries/${deliveryId}/redeliver`, { method: "POST" })
        expect(again.status).toBe(202)
        expect(again.body.delivery.redelivery).toBe(true)

        // Another organization: its key cannot name acme's repository, nor reach acme's webhook by id.
        for (
          const [method, path] of [
            ["GET", "/acme/r/webhooks"],
            ["GET", `/acme/r/webhooks/${ids[0]}`],
            ["POST", `/acme/r/webhooks/${ids[0]}/test`],
            ["GET", `/acme/r/webhooks/${ids[0]}/deliveries/${deliveryId}`],
            ["GET", `/other/r/webhooks/${ids[0]}`],
            ["DELETE", `/other/r/webhooks/${ids[0]}`],
            ["GET", `/other/r/webhooks/${ids[0]}/deliveries`]
          ]
        ) {
          const refused = yield* api(path, { method }, other.key)
          expect(refused.status, `${method} ${path}`).toBe(404)
          expect(refused.body.error).toBe("not_found")
        }
        expect((yield* api(`/acme/r/webhooks/${ids[0]}`)).status).toBe(200)
      }),
    { timeout: 180_000 }
  )
})
