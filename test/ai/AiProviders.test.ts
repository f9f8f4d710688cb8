import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { providerStub, refusedKey, type ReviewAnswer, success } from "./stubs.ts"
import { AiApp, FILE, pullWithChange, slugs } from "./support.ts"

const slug = slugs("aip")

const answer: ReviewAnswer = {
  summary: "A slow loop.",
  overallSentiment: "neutral",
  suggestions: [{
    path: FILE,
    startLine: 5,
    endLine: 6,
    severity: "warning",
    category: "performance",
    title: "Constants could be grouped",
    body: "Group them.",
    replacement: "export const e = 5, f = 6"
  }]
}

layer(AiApp.layer, { excludeTestServices: true, timeout: "180 seconds" })("AI review providers", (it) => {
  it.effect("anthropic: messages with a forced tool, x-api-key and anthropic-version; the tool input is the review", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* AiApp
      const stub = yield* providerStub("anthropic")
      stub.setReview(answer)
      const pr = yield* pullWithChange(baseUrl, slug())
      yield* pr.settings({
        enabled: true,
        modelProvider: "anthropic",
        modelName: "claude-sonnet-4-5",
        apiKey: "sk-ant-test",
        baseUrl: stub.baseUrl,
        autoReviewPRs: false
      })
      const done = yield* pr.finished((yield* pr.trigger()).body.id)
      expect(done.body).toMatchObject({
        status: "completed",
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        overallSentiment: "neutral",
        suggestionsCount: 1,
        performanceIssues: 1,
        usage: { inputTokens: 321, outputTokens: 54 }
      })
      const sent = stub.requests[0]
      expect(sent.path).toBe("/v1/messages")
      expect(sent.headers["x-api-key"]).toBe("sk-ant-test")
      expect(sent.headers["anthropic-version"]).toBe("2023-06-01")
      expect(sent.headers.authorization).toBeUndefined()
      expect(sent.body.model).toBe("claude-sonnet-4-5")
      expect(sent.body.tool_choice).toEqual({ type: "tool", name: "code_review" })
      expect(sent.body.tools[0].input_schema.type).toBe("object")
      expect(sent.body.system).toContain("senior engineer")
      expect(sent.prompt).toContain("export const e = 5")
    }))

  it.effect("google: generateContent with x-goog-api-key (not in the URL) and a JSON schema; a bad key fails", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* AiApp
      const stub = yield* providerStub("google")
      stub.setReview(answer)
      const pr = yield* pullWithChange(baseUrl, slug())
      yield* pr.settings({
        enabled: true,
        modelProvider: "google",
        modelName: "gemini-2.5-flash",
        apiKey: "AIza-test-key",
        baseUrl: stub.baseUrl,
        autoReviewPRs: false
      })
      const done = yield* pr.finished((yield* pr.trigger()).body.id)
      expect(done.body).toMatchObject({ status: "completed", provider: "google", suggestionsCount: 1 })
      const sent = stub.requests[0]
      expect(sent.path).toBe("/v1beta/models/gemini-2.5-flash:generateContent")
      expect(sent.headers["x-goog-api-key"]).toBe("AIza-test-key")
      expect(sent.body.generationConfig.responseMimeType).toBe("application/json")
      expect(sent.body.generationConfig.responseJsonSchema.type).toBe("object")
      expect(sent.body.systemInstruction.parts[0].text).toContain("senior engineer")

      stub.queue.push(refusedKey("google", "AIza-test-key"))
      const failed = yield* pr.finished((yield* pr.trigger()).body.id)
      expect(failed.body.status).toBe("failed")
      expect(failed.body.error).toMatch(/refused the API key/)
      expect(failed.body.error).not.toContain("AIza")
    }))

  it.effect("openai-compatible servers: a tool-call answer is read, and a local server needs no key", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* AiApp
      const stub = yield* providerStub("openai")
      stub.queue.push(success("openai", answer, true))
      const pr = yield* pullWithChange(baseUrl, slug())
      // Like Ollama: a baseUrl, no key.
      const enabled = yield* pr.settings({
        enabled: true,
        baseUrl: stub.baseUrl,
        modelName: "llama3.1",
        autoReviewPRs: false
      })
      expect(enabled.status).toBe(200)
      expect(enabled.body.hasApiKey).toBe(false)
      const done = yield* pr.finished((yield* pr.trigger()).body.id)
      expect(done.body).toMatchObject({ status: "completed", model: "llama3.1", suggestionsCount: 1 })
      expect(stub.requests[0].headers.authorization).toBeUndefined()
    }))

  it.effect("one organization's key is never usable from another organization's repository", () =>
    Effect.gen(function*() {
      const { baseUrl, sql } = yield* AiApp
      const stub = yield* providerStub("openai")
      const a = yield* pullWithChange(baseUrl, slug())
      const b = yield* pullWithChange(baseUrl, slug())
      yield* a.settings({ enabled: true, apiKey: "sk-org-a-only", baseUrl: stub.baseUrl, autoReviewPRs: false })
      yield* b.settings({ enabled: true, apiKey: "sk-org-b", baseUrl: stub.baseUrl, autoReviewPRs: false })
      // Copy A's ciphertext into B's row, as a database-level mix-up or attack would.
      yield* sql`
        UPDATE ai_settings SET api_key_enc = (SELECT api_key_enc FROM ai_settings WHERE repo_id = ${a.repo.id})
        WHERE repo_id = ${b.repo.id}`.pipe(Effect.orDie)
      const done = yield* b.finished((yield* b.trigger()).body.id)
      expect(done.body.status).toBe("completed") // the stub takes any key; what matters is which one it got
      for (const request of stub.requests) expect(request.headers.authorization ?? "").not.toContain("sk-org-a-only")
      expect(stub.requests).toHaveLength(1)
      expect(stub.requests[0].headers.authorization).toBeUndefined()
    }))
})
