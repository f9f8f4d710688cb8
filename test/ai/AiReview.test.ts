import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { addMember } from "../pulls/support.ts"
import { request } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { providerStub, rateLimited, refusedKey, webhookReceiver } from "./stubs.ts"
import { AiApp, aiUrl, FILE, logged, pullWithChange, slugs } from "./support.ts"

const slug = slugs("ai")
const KEY = "sk-test-SECRET-0123456789abcdef"
/** JSON of rows, whatever their column types. */
const text = (value: unknown) => JSON.stringify(value, (_, v) => typeof v === "bigint" ? String(v) : v)

layer(AiApp.layer, { excludeTestServices: true, timeout: "180 seconds" })("AI review", (it) => {
  it.effect("settings: defaults, write-only encrypted key, validation, scopes, other organizations", () =>
    Effect.gen(function*() {
      const { baseUrl, sql } = yield* AiApp
      const { repo, settings } = yield* pullWithChange(baseUrl, slug(), { open: false })
      const url = aiUrl(baseUrl, repo, "/ai/settings")
      const initial = yield* request(url, { token: repo.key })
      expect(initial.status).toBe(200)
      expect(initial.body).toEqual({
        enabled: false,
        modelProvider: "openai",
        modelName: "gpt-4o-mini",
        baseUrl: null,
        hasApiKey: false,
        autoReviewPRs: true,
        reviewDrafts: false,
        autonomyLevel: "suggest",
        requireHumanApproval: true,
        focusAreas: ["security", "performance", "best_practices"]
      })
      // Enabling without a key (and no local server) is refused.
      const noKey = yield* settings({ enabled: true })
      expect(noKey.status).toBe(400)
      expect(noKey.body.error).toBe("validation_error")
      const set = yield* settings({ enabled: true, apiKey: KEY, modelName: "gpt-4.1", focusAreas: ["security"] })
      expect(set.status).toBe(200)
      expect(set.body.hasApiKey).toBe(true)
      expect(JSON.stringify(set.body)).not.toContain(KEY)
      const rows: ReadonlyArray<any> = yield* sql`SELECT api_key_enc FROM ai_settings`.pipe(Effect.orDie)
      const row = rows[0]
      expect(row.api_key_enc).not.toContain(KEY)
      expect(row.api_key_enc.startsWith("v2.")).toBe(true)
      // Removing the key while enabled is refused; unknown fields and bad values are 400s.
      expect((yield* settings({ apiKey: null })).status).toBe(400)
      expect((yield* settings({ autonomyLevel: "yolo" })).status).toBe(400)
      expect((yield* settings({ baseUrl: "ftp://example.com" })).status).toBe(400)
      expect((yield* settings({ baseUrl: "http://user:pw@example.com/v1" })).status).toBe(400)
      expect((yield* settings({ apiKeyy: "x" })).status).toBe(400)
      // A member (no code:admin) may read but not change them.
      const member = yield* addMember(baseUrl, repo.slug, `${repo.slug}-member`)
      expect((yield* request(url, { token: member.key })).status).toBe(200)
      expect((yield* settings({ enabled: false }, member.key)).status).toBe(403)
      // Another organization's repository is a 404.
      const other = yield* pullWithChange(baseUrl, slug(), { open: false })
      expect((yield* request(url, { token: other.repo.key })).status).toBe(404)
      expect((yield* other.settings({ enabled: false }, other.repo.key)).status).toBe(200)
      expect((yield* request(url.replace(repo.slug, other.repo.slug), { token: repo.key })).status).toBe(404)
    }))

  it.effect("openai: a manual review (202) posts inline suggestions by canopy-ai, stores usage and sets ai/review", () =>
    Effect.gen(function*() {
      const { baseUrl, sql } = yield* AiApp
      const stub = yield* providerStub("openai")
      const pr = yield* pullWithChange(baseUrl, slug())
      stub.setReview({
        summary: "One risky call.",
        overallSentiment: "needs_work",
        suggestions: [
          {
            path: FILE,
            startLine: 2,
            endLine: 2,
            severity: "critical",
            category: "security",
            title: "eval of user input",
            body: "Never eval input.",
            replacement: "export const b = Number(input)"
          },
          // Outside the diff (line 1 is not shown): dropped.
          {
            path: FILE,
            startLine: 40,
            endLine: 41,
            severity: "warning",
            category: "bug",
            title: "Out of range",
            body: "x",
            replacement: null
          },
          // A naming nit: dropped.
          {
            path: FILE,
            startLine: 5,
            endLine: 5,
            severity: "info",
            category: "refactor",
            title: "Naming: rename e",
            body: "x",
            replacement: null
          }
        ]
      })
      expect((yield* pr.settings({ enabled: true, apiKey: KEY, baseUrl: stub.baseUrl, autoReviewPRs: false })).status)
        .toBe(200)
      expect((yield* pr.review()).status).toBe(404)
      const triggered = yield* pr.trigger()
      expect(triggered.status).toBe(202)
      expect(triggered.body.status).toBe("queued")
      expect(triggered.body.headSha).toBe(pr.head)
      const done = yield* pr.finished(triggered.body.id)
      expect(done.body).toMatchObject({
        status: "completed",
        overallSentiment: "needs_work",
        suggestionsCount: 1,
        securityIssues: 1,
        performanceIssues: 0,
        provider: "openai",
        model: "gpt-4o-mini",
        usage: { inputTokens: 321, outputTokens: 54 },
        error: null,
        skippedFiles: ["package-lock.json"]
      })
      expect(done.body.summary).toContain("One risky call.")
      expect(done.body.summary).toContain("package-lock.json (lockfile)")
      expect(done.body.suggestions).toHaveLength(1)
      const suggestion = done.body.suggestions[0]
      expect(suggestion).toMatchObject({ path: FILE, startLine: 2, endLine: 2, severity: "critical", state: "open" })

      // The request: the key as Bearer, JSON schema output, the diff with line numbers and the focus.
      expect(stub.requests).toHaveLength(1)
      const sent = stub.requests[0]
      expect(sent.path).toBe("/v1/chat/completions")
      expect(sent.headers.authorization).toBe(`Bearer ${KEY}`)
      expect(sent.body.response_format.type).toBe("json_schema")
      expect(sent.prompt).toContain("eval(input)")
      expect(sent.prompt).toContain("    2 +export const b = eval(input)")
      expect(sent.prompt).not.toContain("package-lock.json (")
      expect(sent.prompt).toContain("security (")

      // The inline comment, by the bot, with a suggestion block.
      const comments = yield* request(pr.pulls.url(`/${pr.number}/comments`), { token: pr.repo.key })
      const inline = comments.body.comments.filter((c: any) => c.path === FILE)
      expect(inline).toHaveLength(1)
      expect(inline[0].author.username).toBe("canopy-ai")
      expect(inline[0].body).toContain("```suggestion\nexport const b = Number(input)\n```")
      expect(inline[0].suggestion.id).toBe(suggestion.id)

      // needs_work: the ai/review status fails.
      const statuses = yield* request(aiUrl(baseUrl, pr.repo, `/commits/${pr.head}/statuses`), { token: pr.repo.key })
      const ai = statuses.body.statuses.filter((s: any) => s.context === "ai/review")
      expect(ai[0].state).toBe("failure")
      expect(ai.map((s: any) => s.state)).toContain("pending")

      // The events, in order: started with the pending status, completed (the row as stored) with the final status.
      const events: ReadonlyArray<any> = yield* sql`
        SELECT type, data FROM domain_events
        WHERE (type LIKE 'ai_review.%' AND data->'aiReview'->>'id' = ${triggered.body.id})
          OR (type = 'commit_status' AND data->>'sha' = ${pr.head} AND data->>'context' = 'ai/review')
        ORDER BY tx, id`.pipe(Effect.orDie)
      expect(events.map((e) => e.type === "commit_status" ? e.data.state : e.type)).toEqual([
        "ai_review.started",
        "pending",
        "ai_review.completed",
        "failure"
      ])
      expect(events[0].data.aiReview).toMatchObject({ status: "running", summary: null, suggestionsCount: 0 })
      expect(events[2].data.aiReview).toEqual({
        id: done.body.id,
        status: "completed",
        headSha: pr.head,
        summary: done.body.summary,
        overallSentiment: "needs_work",
        suggestionsCount: 1,
        securityIssues: 1,
        performanceIssues: 0,
        provider: "openai",
        model: "gpt-4o-mini",
        error: null
      })

      // Dismiss with a reason; dismissing again is a conflict.
      const dismissed = yield* request(aiUrl(baseUrl, pr.repo, `/ai/suggestions/${suggestion.id}/dismiss`), {
        method: "POST",
        token: pr.repo.key,
        body: { reason: "handled elsewhere" }
      })
      expect(dismissed.status).toBe(200)
      expect(dismissed.body).toMatchObject({ state: "dismissed", dismissReason: "handled elsewhere" })
      const again = yield* request(aiUrl(baseUrl, pr.repo, `/ai/suggestions/${suggestion.id}/dismiss`), {
        method: "POST",
        token: pr.repo.key,
        body: {}
      })
      expect(again.status).toBe(409)
    }))

  it.effect("a refused key fails the review with a sentence; the key is in no body, event, row or log", () =>
    Effect.gen(function*() {
      const { baseUrl, sql } = yield* AiApp
      const stub = yield* providerStub("openai")
      const pr = yield* pullWithChange(baseUrl, slug())
      const key = `sk-refused-${Date.now()}-XYZ`
      stub.queue.push(refusedKey("openai", key))
      const receiver = yield* webhookReceiver
      const hook = yield* request(aiUrl(baseUrl, pr.repo, "/webhooks"), {
        method: "POST",
        token: pr.repo.key,
        body: { url: receiver.url, events: ["ai_review.started", "ai_review.completed"] }
      })
      expect(hook.status).toBe(201)
      yield* pr.settings({ enabled: true, apiKey: key, baseUrl: stub.baseUrl, autoReviewPRs: false })
      const triggered = yield* pr.trigger()
      const done = yield* pr.finished(triggered.body.id)
      expect(done.body.status).toBe("failed")
      expect(done.body.error).toMatch(/refused the API key/)
      expect(stub.requests).toHaveLength(1) // a 401 is not retried
      const statuses = yield* request(aiUrl(baseUrl, pr.repo, `/commits/${pr.head}/statuses`), { token: pr.repo.key })
      expect(statuses.body.statuses.find((s: any) => s.context === "ai/review").state).toBe("error")
      const delivered = yield* eventually(
        "the ai_review webhooks",
        Effect.sync(() => receiver.received.map((r) => r.event)),
        (events) => events.includes("ai_review.started") && events.includes("ai_review.completed")
      )
      expect(delivered).toHaveLength(2)
      const completed = JSON.parse(receiver.received.find((r) => r.event === "ai_review.completed")!.body)
      expect(completed).toMatchObject({ event: "ai_review.completed", action: "completed" })
      expect(completed.aiReview).toMatchObject({ id: triggered.body.id, status: "failed" })
      const events = yield* sql`SELECT * FROM domain_events`.pipe(Effect.orDie)
      const deliveries = yield* sql`SELECT * FROM webhook_deliveries`.pipe(Effect.orDie)
      const texts = [
        text(deliveries),
        receiver.received.map((r) => r.body).join(""),
        JSON.stringify(done.body),
        JSON.stringify(statuses.body),
        JSON.stringify(yield* request(pr.pulls.url(`/${pr.number}/comments`), { token: pr.repo.key })),
        text(events),
        logged.join("")
      ]
      for (const each of texts) expect(each).not.toContain(key)
      const reviewRows: ReadonlyArray<any> = yield* sql`SELECT * FROM ai_reviews WHERE id = ${triggered.body.id}`.pipe(
        Effect.orDie
      )
      const row = reviewRows[0]
      expect(text(row)).not.toContain(key)
    }))

  it.effect("a 429 with Retry-After is retried, then the review completes", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* AiApp
      const stub = yield* providerStub("openai")
      const pr = yield* pullWithChange(baseUrl, slug())
      stub.queue.push(rateLimited("openai", "1"))
      yield* pr.settings({ enabled: true, apiKey: KEY, baseUrl: stub.baseUrl, autoReviewPRs: false })
      const started = Date.now()
      const done = yield* pr.finished((yield* pr.trigger()).body.id)
      expect(done.body.status).toBe("completed")
      expect(stub.requests).toHaveLength(2)
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_000)
    }))

  it.effect("automatic: opening a pull request reviews it; a manual trigger without AI enabled is a 409", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* AiApp
      const stub = yield* providerStub("openai")
      const pr = yield* pullWithChange(baseUrl, slug(), { open: false })
      yield* pr.settings({ enabled: true, apiKey: KEY, baseUrl: stub.baseUrl })
      const number = yield* pr.open()
      const done = yield* pr.finished(undefined, number)
      expect(done.body).toMatchObject({ status: "completed", trigger: "auto", overallSentiment: "positive" })
      yield* pr.settings({ enabled: false })
      expect((yield* pr.trigger(number)).status).toBe(409)
      yield* eventually(
        "the success status",
        request(aiUrl(baseUrl, pr.repo, `/commits/${pr.head}/statuses`), {
          token: pr.repo.key
        }),
        (r) => r.body.statuses.some((s: any) => s.context === "ai/review" && s.state === "success")
      )
    }))
})
