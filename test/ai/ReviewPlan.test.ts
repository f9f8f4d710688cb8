import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option, Schema } from "effect"
import { type LanguageModel, OpenAiStructuredOutput } from "effect/ai"
import { AiReviewCompleted, aiReviewEventTypes } from "../../schemas/ai/AiReviewEvents.ts"
import { ModelAnswer, type ModelSuggestion } from "../../schemas/ai/AiReviews.ts"
import type { ChangedFile } from "../../schemas/pulls/PullRequests.ts"
import { openApiKey, sealApiKey } from "../../services/ai/ApiKeySeal.ts"
import { memoized } from "../../services/ai/providers/ModelCall.ts"
import { retryAfterMs } from "../../services/ai/providers/ProviderHttp.ts"
import { keepSuggestions, mergeAnswers, originalLines } from "../../services/ai/ReviewOutput.ts"
import { estimateTokens, MAX_SUGGESTIONS, numberPatch, planPrompt } from "../../services/ai/ReviewPrompt.ts"
import { Crypto } from "../../services/platform/Crypto.ts"
import { NO_RULES } from "../../services/pulls/BranchRules.ts"
import { evaluateChecks } from "../../services/pulls/MergeChecks.ts"
import { sourceEventTypes, toWebhookEvent } from "../../services/webhooks/Payloads.ts"

const file = (path: string, lines: number, status: ChangedFile["status"] = "modified"): ChangedFile => ({
  path,
  status,
  additions: lines,
  deletions: 0,
  patch: `@@ -0,0 +1,${lines} @@\n${Array.from({ length: lines }, (_, i) => `+line ${i + 1} of ${path}`).join("\n")}`
})

const suggestion = (over: Partial<ModelSuggestion>): ModelSuggestion => ({
  path: "a.ts",
  startLine: 1,
  endLine: 1,
  severity: "info",
  category: "bug",
  title: "A problem",
  body: "b",
  replacement: null,
  ...over
})

describe("review prompt (pure)", () => {
  it("numbers new-side lines and leaves out lockfiles, binaries and generated files, naming them", () => {
    expect(numberPatch("@@ -1,2 +1,2 @@\n a\n-b\n+c")).toBe("@@ -1,2 +1,2 @@\n    1  a\n      -b\n    2 +c")
    const plan = planPrompt({
      title: "T",
      body: "",
      files: [
        file("src/a.ts", 3),
        file("package-lock.json", 3),
        { ...file("logo.png", 0), patch: "" },
        file("dist/bundle.min.js", 3),
        file("gone.ts", 2, "removed")
      ],
      focusAreas: ["security"],
      prior: []
    })
    expect(plan.calls).toHaveLength(1)
    expect(plan.calls[0].files.map((f) => f.path)).toEqual(["src/a.ts"])
    expect(plan.leftOut).toEqual([
      { path: "package-lock.json", reason: "lockfile" },
      { path: "logo.png", reason: "binary" },
      { path: "dist/bundle.min.js", reason: "generated" }
    ])
    expect(plan.system).toContain("security (")
    expect(plan.system).not.toContain("performance (")
  })

  it("packs files in order within the budget; only an oversized diff is split, and no call exceeds it", () => {
    const files = Array.from({ length: 40 }, (_, i) => file(`src/f${i}.ts`, 50))
    const one = planPrompt({ title: "T", body: "", files: files.slice(0, 2), focusAreas: [], prior: [] })
    expect(one.calls).toHaveLength(1)
    const budget = 8_000
    const split = planPrompt({ title: "T", body: "", files, focusAreas: [], prior: [], budget })
    expect(split.calls.length).toBeGreaterThan(1)
    for (const call of split.calls) {
      expect(estimateTokens(split.system) + estimateTokens(call.user)).toBeLessThanOrEqual(budget)
    }
    const packed = split.calls.flatMap((call) => call.files.map((f) => f.path))
    const over = split.leftOut.map((item) => item.path)
    expect([...packed, ...over]).toEqual(files.map((f) => f.path))
    expect(split.leftOut.every((item) => item.reason === "over the budget")).toBe(true)
  })

  it("keeps suggestions inside the diff, drops nits and repeats, most severe first, at most ten", () => {
    const files = [file("a.ts", 30)]
    const many = Array.from(
      { length: 14 },
      (_, i) => suggestion({ startLine: i + 2, endLine: i + 2, severity: i === 13 ? "critical" : "info" })
    )
    const kept = keepSuggestions(
      [
        suggestion({ startLine: 40, endLine: 41 }),
        suggestion({ path: "other.ts" }),
        suggestion({ title: "Naming: rename x" }),
        suggestion({ startLine: 1, endLine: 1, title: "Said before" }),
        ...many
      ],
      files,
      [{ path: "a.ts", startLine: 1, endLine: 1, title: "earlier" }]
    )
    expect(kept).toHaveLength(MAX_SUGGESTIONS)
    expect(kept[0].severity).toBe("critical")
    expect(kept.every((s) => s.startLine >= 2 && s.startLine <= 30)).toBe(true)
    const merged = mergeAnswers([
      { summary: "a", overallSentiment: "positive", suggestions: [] },
      { summary: "b", overallSentiment: "needs_work", suggestions: [] }
    ])
    expect(merged).toEqual({ summary: "a\n\nb", overallSentiment: "needs_work", suggestions: [] })
  })

  it("Retry-After in seconds or as an HTTP date", () => {
    expect(retryAfterMs("2", 0)).toBe(2_000)
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6_000)
    expect(retryAfterMs(undefined, 0)).toBeUndefined()
    expect(retryAfterMs("soon", 0)).toBeUndefined()
  })
})

describe("the ai_review merge check", () => {
  const inputs = (statuses: Record<string, "pending" | "success" | "failure" | "error">, required: Array<string>) => ({
    policy: { ...NO_RULES, requiredStatusChecks: required },
    authorId: "u",
    headSha: "h",
    reviews: [],
    mergeable: true,
    conflicts: [],
    statuses: new Map(Object.entries(statuses)),
    unsignedCommits: [],
    codeOwners: new Set<string>(),
    strategy: undefined
  })
  it("reads ai/review when a rule requires it or the merge waits for it", () => {
    const named = (checks: ReturnType<typeof evaluateChecks>) => checks.find((c) => c.name === "ai_review")
    expect(named(evaluateChecks(inputs({}, [])))).toBeUndefined()
    expect(named(evaluateChecks(inputs({}, ["ai/review"])))?.status).toBe("pending")
    expect(named(evaluateChecks(inputs({ "ai/review": "failure" }, ["ai/review"])))?.status).toBe("failed")
    expect(named(evaluateChecks(inputs({ "ai/review": "success" }, ["ai/review"])))?.status).toBe("passed")
    expect(named(evaluateChecks({ ...inputs({}, []), aiReviewRequired: true }))?.status).toBe("pending")
    // ai/review is not listed twice.
    expect(evaluateChecks(inputs({}, ["ai/review"])).find((c) => c.name === "status_checks")).toBeUndefined()
  })
})

describe("the sealed provider key", () => {
  it.effect("opens only for its own organization and repository", () =>
    Effect.gen(function*() {
      const crypto = yield* Crypto
      const sealed = yield* sealApiKey(crypto, "org_a", "repo_1", "sk-secret")
      expect(sealed).not.toContain("sk-secret")
      expect(yield* openApiKey(crypto, "org_a", "repo_1", sealed)).toBe("sk-secret")
      expect(Exit.isFailure(yield* Effect.exit(openApiKey(crypto, "org_a", "repo_2", sealed)))).toBe(true)
      expect(Exit.isFailure(yield* Effect.exit(openApiKey(crypto, "org_b", "repo_1", sealed)))).toBe(true)
    }).pipe(Effect.provide(Crypto.layer(new Uint8Array(32).fill(7)))))
})

describe("ai_review webhook payloads", () => {
  it("every ai_review.* event is consumed and delivered with its review", () => {
    for (const type of aiReviewEventTypes) expect(sourceEventTypes).toContain(type.type)
    const data = {
      repository: { id: "repo_1", name: "r", fullName: "acme/r" },
      pullRequest: {
        id: "pr_1",
        number: 3,
        title: "T",
        body: "",
        state: "open",
        sourceBranch: "feature",
        targetBranch: "main",
        headSha: "a".repeat(40),
        author: { id: "usr_1", name: "Ada" }
      },
      aiReview: {
        id: "air_1",
        status: "completed",
        headSha: "a".repeat(40),
        summary: "ok",
        overallSentiment: "positive",
        suggestionsCount: 0,
        securityIssues: 0,
        performanceIssues: 0,
        provider: "openai",
        model: "m",
        error: null
      },
      sender: null,
      timestamp: "2026-11-28T09:00:00.000Z"
    }
    const mapped = Option.getOrThrow(
      toWebhookEvent({ id: 1, createdAt: new Date(), ...AiReviewCompleted.make("org_1", data) })
    )
    expect(mapped.repoId).toBe("repo_1")
    expect(mapped.payload({ id: "org_1", slug: "acme" })).toEqual({
      event: "ai_review.completed",
      action: "completed",
      ...data
    })
  })
})

describe("review output and model calls", () => {
  it("the structured output's codec transformer runs once per schema", () => {
    let calls = 0
    const counting: LanguageModel.CodecTransformer = (schema) => {
      calls++
      return OpenAiStructuredOutput.toCodecOpenAI(schema)
    }
    const cached = memoized(counting)
    const first = cached(ModelAnswer)
    expect(cached(ModelAnswer)).toBe(first)
    expect(memoized(counting)(ModelAnswer)).toBe(first)
    expect(calls).toBe(1)
    expect(first.jsonSchema).toEqual(OpenAiStructuredOutput.toCodecOpenAI(ModelAnswer).jsonSchema)
    cached(Schema.Struct({ other: Schema.String }))
    expect(calls).toBe(2)
  })

  it("the replaced lines come from the diff of the files suggestions name", () => {
    const files = [file("a.ts", 5), file("b.ts", 3)]
    const kept = [
      suggestion({ path: "b.ts", startLine: 2, endLine: 3 }),
      suggestion({ path: "a.ts", startLine: 5, endLine: 5 })
    ]
    expect(originalLines(kept, files)).toEqual([["line 2 of b.ts", "line 3 of b.ts"], ["line 5 of a.ts"]])
  })
})
