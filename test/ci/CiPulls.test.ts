import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { gitClient } from "../git/gitClient.ts"
import { addMember, api, pushBranch } from "../pulls/support.ts"
import { request, startApp } from "../support/app.ts"
import { eventually, realSleep } from "../support/wait.ts"
import { ciRepo, failingTest, nodeProject, passingTest } from "./support.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string }>()("test/ci/CiPullsApp") {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl })))

let counter = 0
const slug = (name: string) => `${name}-${process.pid}-${++counter}`

/** The pull request runs of a repository, newest first. */
const prRuns = (ci: { runs: (query?: string) => Effect.Effect<any> }) =>
  Effect.map(ci.runs(), (r) => (r.body.runs as Array<any>).filter((run) => run.event === "pull_request"))

layer(TestAppLive, { excludeTestServices: true, timeout: "240 seconds" })("CI on pull requests", (it) => {
  it.effect(
    "a pull request runs with SERVICE_PR_NUMBER; a rule requiring ci/test blocks the merge until a fixed push passes",
    () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestApp
        const git = yield* gitClient
        const { ci, dir, repo } = yield* ciRepo(git, baseUrl, slug("ci-pr"), {
          plan: "pro",
          config: {
            triggerOnPush: false,
            testCommand: "echo PR=$SERVICE_PR_NUMBER BRANCH=$SERVICE_BRANCH && npm test"
          },
          files: nodeProject({ "math.test.js": passingTest })
        })
        const rule = yield* request(`${ci.url("/branches/protection")}`, {
          method: "POST",
          token: repo.key,
          body: {
            branchPattern: "main",
            requiredApprovals: 0,
            requireStatusChecks: true,
            requiredStatusChecks: ["ci/test"]
          }
        })
        expect(rule.status).toBe(201)
        const head = yield* pushBranch(git, dir, "feature", [{ "test/math.test.js": failingTest }])
        const pulls = api(baseUrl, repo)
        const opened = yield* pulls.create({ title: "Break math", sourceBranch: "feature" })
        expect(opened.status).toBe(201)
        const number = opened.body.number

        const [run] = yield* eventually("the pull request's run", prRuns(ci), (runs) => runs.length === 1)
        expect(run).toMatchObject({ event: "pull_request", prNumber: number, branch: "feature", commitSha: head })
        const failed = yield* ci.completed(run.number)
        expect(failed.run.conclusion).toBe("failure")
        const testJob = failed.jobs.find((job: any) => job.name === "test")
        expect((yield* ci.log(run.number, testJob.id)).text).toContain(`PR=${number} BRANCH=feature`)

        // A member merges (owners and admins bypass rules).
        const member = yield* addMember(baseUrl, repo.slug, `${repo.slug}-dev`)
        const blocked = yield* pulls.merge(number, {}, member.key)
        expect(blocked.status).toBe(409)
        expect(blocked.body.error).toBe("merge_blocked")
        expect(blocked.body.checks).toContainEqual(expect.objectContaining({ name: "status_checks", status: "failed" }))

        // A fixed push updates the pull request: a new run, and the merge goes through once it passes.
        const fixed = yield* pushBranch(git, dir, "feature", [{ "test/math.test.js": passingTest }], "feature")
        const runs = yield* eventually("the update's run", prRuns(ci), (list) => list.length === 2)
        expect(runs[0]).toMatchObject({ commitSha: fixed, prNumber: number })
        expect((yield* ci.completed(runs[0].number)).run.conclusion).toBe("success")
        const merged = yield* pulls.merge(number, {}, member.key)
        expect(merged.status, JSON.stringify(merged.body)).toBe(200)
        expect(merged.body.merged).toBe(true)
      }).pipe(Effect.scoped),
    150000
  )

  it.effect(
    "with CI enabled, auto-merge waits for ci/test on the head even without a rule",
    () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestApp
        const git = yield* gitClient
        const { ci, dir, repo } = yield* ciRepo(git, baseUrl, slug("ci-auto"), {
          plan: "free",
          config: { triggerOnPush: false, installCommand: "true", testCommand: "sleep 3 && npm test" },
          files: nodeProject({ "math.test.js": passingTest })
        })
        yield* pushBranch(git, dir, "feature", [{ "feature.txt": "feature\n" }])
        const pulls = api(baseUrl, repo)
        const number = (yield* pulls.create({ title: "Auto", sourceBranch: "feature" })).body.number
        const enabled = yield* request(pulls.url(`/${number}/auto-merge`), {
          method: "PUT",
          token: repo.key,
          body: { strategy: "merge" }
        })
        expect(enabled.status).toBe(200)
        const [run] = yield* eventually("the pull request's run", prRuns(ci), (runs) => runs.length === 1)
        // Until the run completes (over 3 s), the pull request stays open (without the CI gate
        // auto-merge merges within a second: no rule requires anything). One poll a second:
        // Free allows 50 requests a minute, and a run takes long on a busy machine.
        let polls = 0
        while ((yield* ci.run(run.number)).body.run.status !== "completed") {
          expect((yield* pulls.get(number)).body.state).toBe("open")
          polls++
          yield* realSleep(1000)
        }
        // The job sleeps 3 s: the loop saw the run unfinished (and the pull request open) more than once,
        // however slow each poll is on a busy machine.
        expect(polls).toBeGreaterThan(1)
        expect((yield* ci.run(run.number)).body.run.conclusion).toBe("success")
        const merged = yield* eventually("auto-merge", pulls.get(number), (r) => r.body.state === "merged")
        expect(merged.body.state).toBe("merged")
      }).pipe(Effect.scoped),
    150000
  )
})
