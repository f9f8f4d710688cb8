import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { commit } from "../git/gitClient.ts"
import { addMember } from "../pulls/support.ts"
import { request } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { providerStub, type ReviewAnswer, success } from "./stubs.ts"
import { AiApp, aiUrl, FILE, pullWithChange, slugs } from "./support.ts"

const slug = slugs("aia")
const KEY = "sk-autonomy"

const warningAndCritical: ReviewAnswer = {
  summary: "Two findings.",
  overallSentiment: "neutral",
  suggestions: [
    {
      path: FILE,
      startLine: 5,
      endLine: 6,
      severity: "warning",
      category: "best_practice",
      title: "Group the new constants",
      body: "One declaration reads better.",
      replacement: "export const e = 5\nexport const f = 6 // grouped"
    },
    {
      path: FILE,
      startLine: 2,
      endLine: 2,
      severity: "critical",
      category: "security",
      title: "eval of user input",
      body: "Never eval input.",
      replacement: "export const b = Number(input)"
    }
  ]
}

const comments = (pr: Effect.Success<ReturnType<typeof pullWithChange>>, number: number) =>
  Effect.map(
    request(pr.pulls.url(`/${number}/comments`), { token: pr.repo.key }),
    (r) => r.body.comments as ReadonlyArray<any>
  )

layer(AiApp.layer, { excludeTestServices: true, timeout: "240 seconds" })("AI review autonomy", (it) => {
  it.effect("apply: safe suggestions are committed by the bot, a critical one waits for a human; no re-review", () =>
    Effect.gen(function*() {
      const { baseUrl, sql } = yield* AiApp
      const stub = yield* providerStub("openai")
      stub.setReview(warningAndCritical)
      const pr = yield* pullWithChange(baseUrl, slug(), { open: false })
      yield* pr.settings({ enabled: true, apiKey: KEY, baseUrl: stub.baseUrl, autonomyLevel: "apply" })
      const number = yield* pr.open()
      const done = yield* pr.finished(undefined, number)
      expect(done.body.status).toBe("completed")
      const applied = yield* eventually(
        "the safe suggestion applied",
        Effect.map(pr.review(number), (r) => r.body.suggestions as ReadonlyArray<any>),
        (list) => list.some((s) => s.state === "applied")
      )
      const warning = applied.find((s) => s.severity === "warning")
      const critical = applied.find((s) => s.severity === "critical")
      expect(warning.state).toBe("applied")
      expect(critical.state).toBe("open")
      // The commit: author and committer the bot, on the source branch.
      yield* pr.git.ok(["fetch", "-q", "origin", "feature"], { cwd: pr.dir })
      const log = yield* pr.git.ok(["log", "-1", "--format=%H|%an|%cn", "FETCH_HEAD"], { cwd: pr.dir })
      expect(log.trim()).toBe(`${warning.appliedSha}|Canopy AI|Canopy AI`)
      const file = yield* pr.git.ok(["show", `FETCH_HEAD:${FILE}`], { cwd: pr.dir })
      expect(file).toContain("export const f = 6 // grouped")
      expect(file).toContain("eval(input)")
      const said = yield* eventually(
        "the bot's comment",
        comments(pr, number),
        (list) => list.some((c) => c.path === null && /applied 1 suggestion/.test(c.body))
      )
      const summary = said.find((c) => c.path === null && /applied 1 suggestion/.test(c.body))
      expect(summary.author.username).toBe("canopy-ai")
      expect(summary.body).toMatch(/1 critical suggestion\(s\) wait for a human/)
      // A human applies the critical one through the AI endpoint: author the bot, committer the human.
      const byHand = yield* request(aiUrl(baseUrl, pr.repo, `/ai/suggestions/${critical.id}/apply`), {
        method: "POST",
        token: pr.repo.key
      })
      expect(byHand.status).toBe(200)
      expect(byHand.body.suggestion.state).toBe("applied")
      yield* pr.git.ok(["fetch", "-q", "origin", "feature"], { cwd: pr.dir })
      const second = yield* pr.git.ok(["log", "-1", "--format=%H|%an|%cn", "FETCH_HEAD"], { cwd: pr.dir })
      expect(second.trim()).toBe(`${byHand.body.commitSha}|Canopy AI|${pr.repo.slug}-owner`)
      const again = yield* request(aiUrl(baseUrl, pr.repo, `/ai/suggestions/${critical.id}/apply`), {
        method: "POST",
        token: pr.repo.key
      })
      expect(again.status).toBe(409)
      // The AI's own commit queued no new review; the human's push did (auto review on updates).
      const reviews = yield* eventually(
        "the review of the human's commit",
        sql`SELECT head_sha FROM ai_reviews ORDER BY seq`.pipe(Effect.orDie),
        (rows) => rows.some((r: any) => r.head_sha === byHand.body.commitSha)
      )
      expect(reviews.map((r: any) => r.head_sha)).not.toContain(warning.appliedSha)
    }))

  it.effect("merge: waits for a human approval, then the bot merges and says so", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* AiApp
      const stub = yield* providerStub("openai")
      const pr = yield* pullWithChange(baseUrl, slug(), { open: false })
      yield* pr.settings({ enabled: true, apiKey: KEY, baseUrl: stub.baseUrl, autonomyLevel: "merge" })
      const number = yield* pr.open()
      yield* pr.finished(undefined, number)
      yield* eventually(
        "the waiting comment",
        comments(pr, number),
        (list) => list.some((c) => /once ready: waiting for a human approval/.test(c.body))
      )
      expect((yield* pr.pulls.get(number)).body.state).toBe("open")
      const reviewer = yield* addMember(baseUrl, pr.repo.slug, `${pr.repo.slug}-rev`)
      expect((yield* pr.pulls.review(number, { state: "approved", body: "ok" }, reviewer.key)).status).toBe(201)
      const merged = yield* eventually(
        "the AI's merge",
        pr.pulls.get(number),
        (r) => r.body.state === "merged",
        { timeoutMs: 60_000 }
      )
      expect(merged.body.mergedBy.username).toBe("canopy-ai")
      // The bot says so in a comment, posted after the merge.
      yield* eventually(
        "the bot's merge comment",
        comments(pr, number),
        (list) => list.some((c) => /Canopy AI merged this pull request/.test(c.body))
      )
    }))

  it.effect("merge: a needs_work review stops the flow with a comment", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* AiApp
      const stub = yield* providerStub("openai")
      stub.setReview({ summary: "Not ready.", overallSentiment: "needs_work", suggestions: [] })
      const pr = yield* pullWithChange(baseUrl, slug(), { open: false })
      yield* pr.settings({
        enabled: true,
        apiKey: KEY,
        baseUrl: stub.baseUrl,
        autonomyLevel: "merge",
        requireHumanApproval: false
      })
      const number = yield* pr.open()
      yield* pr.finished(undefined, number)
      const list = yield* eventually(
        "the stop comment",
        comments(pr, number),
        (l) => l.some((c) => /will not merge/.test(c.body))
      )
      expect(list.find((c) => /will not merge/.test(c.body)).body).toMatch(/needs work/)
      expect((yield* pr.pulls.get(number)).body.state).toBe("open")
    }))

  it.effect("a push supersedes a running review; auto-merge waits for ai/review", () =>
    Effect.gen(function*() {
      const { baseUrl, sql } = yield* AiApp
      const stub = yield* providerStub("openai")
      let release: () => void = () => {}
      const hold = new Promise<void>((resolve) => {
        release = resolve
      })
      stub.queue.push({ ...success("openai", { summary: "old", overallSentiment: "positive", suggestions: [] }), hold })
      const pr = yield* pullWithChange(baseUrl, slug(), { open: false })
      yield* pr.settings({ enabled: true, apiKey: KEY, baseUrl: stub.baseUrl })
      const number = yield* pr.open()
      const auto = yield* request(pr.pulls.url(`/${number}/auto-merge`), {
        method: "PUT",
        token: pr.repo.key,
        body: { strategy: "squash" }
      })
      expect(auto.status).toBe(200)
      yield* eventually("the first call", Effect.sync(() => stub.requests.length), (n) => n === 1)
      const first = (yield* pr.review(number)).body
      expect(first.status).toBe("running")
      // Auto-merge would merge now (no rules), but waits for the AI review.
      expect((yield* pr.pulls.get(number)).body.state).toBe("open")
      yield* pr.git.ok(["checkout", "-q", "feature"], { cwd: pr.dir })
      const newHead = yield* commit(pr.git, pr.dir, { "later.txt": "later\n" }, "later")
      yield* pr.git.ok(["push", "-q", "origin", "feature"], { cwd: pr.dir })
      const second = yield* eventually(
        "the review of the new head",
        pr.review(number),
        (r) => r.body.headSha === newHead && r.body.status === "completed",
        { timeoutMs: 60_000 }
      )
      expect(second.body.id).not.toBe(first.id)
      release()
      const rows: ReadonlyArray<any> = yield* sql`SELECT status, error FROM ai_reviews WHERE id = ${first.id}`.pipe(
        Effect.orDie
      )
      expect(rows[0].status).toBe("failed")
      expect(rows[0].error).toMatch(/Superseded by a newer review/)
      const merged = yield* eventually("auto-merge after the AI review", pr.pulls.get(number), (r) =>
        r.body.state === "merged", { timeoutMs: 60_000 })
      expect(merged.body.mergeCommitSha).toBeTruthy()
    }))
})
