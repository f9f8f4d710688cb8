import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createRepo } from "../git/gitClient.ts"
import { request, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { startReceiver } from "../webhooks/receiver.ts"

describe("repository issue webhooks", () => {
  it.live(
    "issue.opened, issue.updated, issue.commented and issue.closed reach a repository webhook",
    () =>
      Effect.gen(function*() {
        const receiver = yield* startReceiver()
        const app = yield* startApp()
        const repo = yield* createRepo(app.baseUrl, { slug: "hooked-issues", plan: "free" })
        const api = (path: string, init?: { method?: string; body?: unknown }) =>
          request(`${app.baseUrl}/api/v1/code/repos/hooked-issues/r${path}`, { ...init, token: repo.key })
        const hook = yield* api("/webhooks", {
          method: "POST",
          body: {
            url: receiver.url("/issues"),
            events: ["issue.opened", "issue.closed", "issue.updated", "issue.commented"]
          }
        })
        expect(hook.status).toBe(201)

        const issue = (yield* api("/issues", { method: "POST", body: { title: "Broken", labels: ["bug"] } })).body
        yield* api("/issues/1", { method: "PATCH", body: { body: "Details" } })
        const comment = (yield* api("/issues/1/comments", { method: "POST", body: { body: "Me too" } })).body
        yield* api("/issues/1", { method: "PATCH", body: { state: "closed" } })

        yield* eventually(
          "four successful issue deliveries",
          Effect.map(api(`/webhooks/${hook.body.id}/deliveries`), (list) => list.body.deliveries),
          (deliveries: Array<any>) => deliveries.length === 4 && deliveries.every((d) => d.status === "success"),
          { timeoutMs: 150_000 }
        )
        // A delivery retried under load may arrive after later ones: compare by event.
        const byEvent = new Map<string, any>()
        for (const request of receiver.on("/issues")) {
          const event = String(request.headers["x-service-event"])
          if (!byEvent.has(event)) byEvent.set(event, JSON.parse(request.body.toString("utf8")))
        }
        expect([...byEvent.keys()].sort()).toEqual(["issue.closed", "issue.commented", "issue.opened", "issue.updated"])
        const payload = (event: string) => byEvent.get(event)
        for (const [event, value] of byEvent) expect(value.action).toBe(event.slice("issue.".length))
        const repository = { id: repo.id, name: "r", fullName: "hooked-issues/r" }
        expect(Object.keys(payload("issue.opened")).sort()).toEqual(
          ["action", "event", "issue", "repository", "sender", "timestamp"]
        )
        expect(payload("issue.opened")).toMatchObject({
          event: "issue.opened",
          repository,
          issue,
          sender: { id: repo.user.id }
        })
        expect(payload("issue.updated")).toMatchObject({ issue: { body: "Details" }, changes: { body: { from: "" } } })
        expect(payload("issue.commented")).toMatchObject({ comment, issue: { number: 1 } })
        expect(payload("issue.closed")).toMatchObject({ issue: { state: "closed", closedBy: null } })
      }),
    { timeout: 240_000 }
  )
})
