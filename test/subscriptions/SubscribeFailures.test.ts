import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { request, startApp } from "../support/app.ts"

/** GUIDE §6: every subscribe failure is 400 `{success: false, error, message}`, Schema failures included. */
it.effect(
  "a subscribe body that fails its Schema or is not JSON answers in the subscribe failure shape",
  () =>
    Effect.gen(function*() {
      const app = yield* startApp()
      const subscribe = (body: unknown, headers?: Record<string, string>) =>
        request(`${app.baseUrl}/api/v1/subscribe`, { method: "POST", body, ...(headers ? { headers } : {}) })

      const noToken = yield* subscribe({ orgSlug: "acme", email: "ann@example.com" })
      expect(noToken.status).toBe(400)
      expect(noToken.body).toMatchObject({ success: false, error: "validation_error", message: expect.any(String) })
      expect(noToken.body.details.map((detail: { path: string }) => detail.path)).toContain("body.challengeToken")

      const wrongType = yield* subscribe({ orgSlug: "acme", email: 7, challengeToken: "x" })
      expect(wrongType.status).toBe(400)
      expect(wrongType.body).toMatchObject({ success: false, error: "validation_error" })

      const notJson = yield* subscribe("{not json", { "content-type": "application/json" })
      expect(notJson.status).toBe(400)
      expect(notJson.body).toMatchObject({ success: false, error: "validation_error" })

      // A well-formed request with a bad token is refused by the service, in the same shape.
      const badToken = yield* subscribe({ orgSlug: "acme", email: "ann@example.com", challengeToken: "bm9wZQ==" })
      expect(badToken.status).toBe(400)
      expect(badToken.body).toMatchObject({ success: false, error: "invalid_challenge" })
    }),
  { timeout: 120_000 }
)
