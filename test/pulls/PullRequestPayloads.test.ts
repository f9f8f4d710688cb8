import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { pullRequestEventTypes, PullRequestReviewSubmitted } from "../../schemas/pulls/PullRequestEvents.ts"
import { CreateRepoWebhook } from "../../schemas/webhooks/Webhooks.ts"
import { sourceEventTypes, toWebhookEvent } from "../../services/webhooks/Payloads.ts"

const base = {
  repository: { id: "repo_1", name: "r", fullName: "acme/r" },
  pullRequest: {
    id: "pr_1",
    number: 3,
    title: "T",
    body: "B",
    state: "open",
    sourceBranch: "feature",
    targetBranch: "main",
    headSha: "a".repeat(40),
    author: { id: "usr_1", name: "Ada" }
  },
  sender: { id: "usr_2", name: "Grace" },
  timestamp: "2026-11-23T10:00:00.000Z"
}

describe("pull request webhook payloads", () => {
  it.effect("every pull_request.* event is consumed and delivered with the spec's fields", () =>
    Effect.sync(() => {
      for (const type of pullRequestEventTypes) expect(sourceEventTypes).toContain(type.type)
      const event = PullRequestReviewSubmitted.make("org_1", {
        ...base,
        review: { id: "rev_1", state: "approved", body: "", reviewer: "grace" }
      })
      const mapped = toWebhookEvent({ id: 1, createdAt: new Date(), ...event })
      expect(Option.isSome(mapped)).toBe(true)
      const webhook = Option.getOrThrow(mapped)
      expect(webhook.event).toBe("pull_request.review_submitted")
      expect(webhook.repoId).toBe("repo_1")
      expect(webhook.payload({ id: "org_1", slug: "acme" })).toEqual({
        event: "pull_request.review_submitted",
        action: "review_submitted",
        ...base,
        review: { id: "rev_1", state: "approved", body: "", reviewer: "grace" }
      })
    }))

  it.effect("repository webhooks accept the pull request event names", () =>
    Effect.sync(() => {
      const decoded = Schema.decodeUnknownSync(CreateRepoWebhook)({
        url: "https://example.com/hook",
        events: pullRequestEventTypes.map((type) => type.type)
      })
      expect(decoded.events).toHaveLength(6)
    }))
})
