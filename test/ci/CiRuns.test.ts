import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { gitClient } from "../git/gitClient.ts"
import { startApp } from "../support/app.ts"
import { ciRepo, failingTest, nodeProject, passingTest, pushCommit } from "./support.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string }>()("test/ci/CiRunsApp") {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl })))

let counter = 0
const slug = (name: string) => `${name}-${process.pid}-${++counter}`

layer(TestAppLive, { excludeTestServices: true, timeout: "240 seconds" })("CI runs", (it) => {
  it.effect("a push runs install and test; a failing run, then a fixed one, with summary and ci/test status", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const { ci, dir, head: first } = yield* ciRepo(git, baseUrl, slug("ci-fail"), {
        files: nodeProject({ "math.test.js": failingTest })
      })

      const failed = yield* ci.completed(1)
      expect(failed.run).toMatchObject({
        number: 1,
        status: "completed",
        conclusion: "failure",
        event: "push",
        branch: "main",
        commitSha: first,
        prNumber: null
      })
      expect(failed.run.id).toMatch(/^run_/)
      expect(failed.jobs.map((job: any) => [job.name, job.command, job.conclusion])).toEqual([
        ["install", "npm ci", "success"],
        ["test", "npm test", "failure"]
      ])
      expect(failed.testSummary).toMatchObject({ total: 2, passed: 1, failed: 1, skipped: 0, coverage: null })
      expect(failed.testSummary.failures).toHaveLength(1)
      expect(failed.testSummary.failures[0].name).toBe("multiplies")
      const failedStatus = yield* ci.statuses(first!)
      expect(failedStatus.body.statuses.filter((s: any) => s.context === "ci/test").map((s: any) => s.state))
        .toEqual(["failure", "pending"])

      const fixed = yield* pushCommit(git, dir, { "test/math.test.js": passingTest })
      const passed = yield* ci.completed(2)
      expect(passed.run).toMatchObject({ number: 2, conclusion: "success", commitSha: fixed })
      expect(passed.testSummary).toMatchObject({ total: 1, passed: 1, failed: 0, failures: [] })
      expect((yield* ci.statuses(fixed)).body.statuses[0]).toMatchObject({ context: "ci/test", state: "success" })
      expect(typeof passed.run.duration).toBe("number")
      const listed = yield* ci.runs("?status=completed&limit=1")
      expect(listed.status).toBe(200)
      expect(listed.body.count).toBe(2)
      expect(listed.body.runs.map((run: any) => run.number)).toEqual([2])
    }).pipe(Effect.scoped))
})
