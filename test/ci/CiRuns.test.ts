import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { createHash, randomBytes } from "node:crypto"
import { createRepo, gitClient } from "../git/gitClient.ts"
import { connectLive, liveUrl } from "../live/client.ts"
import { addMember } from "../pulls/support.ts"
import { request, startApp } from "../support/app.ts"
import { eventually } from "../support/wait.ts"
import { ciApi, ciRepo, failingTest, hostProcesses, nodeProject, passingTest, pushCommit } from "./support.ts"

class TestApp extends Context.Service<TestApp, { readonly baseUrl: string; readonly sql: SqlClient.SqlClient }>()(
  "test/ci/CiRunsApp"
) {}
const TestAppLive = Layer.effect(TestApp, Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl, sql: app.sql })))

let counter = 0
const slug = (name: string) => `${name}-${process.pid}-${++counter}`

layer(TestAppLive, { excludeTestServices: true, timeout: "240 seconds" })("CI runs", (it) => {
  it.effect(
    "a push runs install and test; a failing run, then a fixed one, with summary and ci/test status",
    () =>
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
        // The webhook events of run #2, in order, with the run (and job) in their payloads.
        const { sql } = yield* TestApp
        const events = yield* sql<{ type: string; data: any }>`
        SELECT type, data FROM domain_events
        WHERE type IN ('ci.run_started', 'ci.job_completed', 'ci.run_completed') AND data->'run'->>'id' = ${passed.run.id}
        ORDER BY id`.pipe(Effect.orDie)
        expect(events.map((event) => event.type)).toEqual([
          "ci.run_started",
          "ci.job_completed",
          "ci.job_completed",
          "ci.run_completed"
        ])
        expect(events[1].data).toMatchObject({
          repository: { fullName: expect.stringMatching(/\/r$/) },
          job: { name: "install", conclusion: "success" }
        })
        expect(events[3].data).toMatchObject({ run: { conclusion: "success" }, testSummary: { passed: 1 } })
        const listed = yield* ci.runs("?status=completed&limit=1")
        expect(listed.status).toBe(200)
        expect(listed.body.count).toBe(2)
        expect(listed.body.runs.map((run: any) => run.number)).toEqual([2])
      }).pipe(Effect.scoped),
    150000
  )

  it.effect(
    "configuration defaults, validation, and variables with secrets never returned",
    () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestApp
        const repo = yield* createRepo(baseUrl, { slug: slug("ci-config"), plan: "free" })
        const ci = ciApi(baseUrl, repo)
        expect((yield* ci.config()).body).toEqual({
          enabled: false,
          projectType: "auto",
          installCommand: null,
          testCommand: null,
          lintCommand: null,
          buildCommand: null,
          timeout: 600,
          cacheEnabled: true,
          triggerOnPush: true,
          triggerOnPR: true
        })
        // CI off: a manual run is a conflict.
        expect((yield* ci.trigger({ branch: "main" })).status).toBe(409)
        expect((yield* ci.patchConfig({ timeout: 901 })).status).toBe(400)
        expect((yield* ci.patchConfig({ timeout: 5 })).status).toBe(400)
        expect((yield* ci.patchConfig({ projectType: "cobol" })).status).toBe(400)
        expect((yield* ci.patchConfig({ enable: true })).status).toBe(400)
        const patched = yield* ci.patchConfig({ enabled: true, projectType: "nodejs", lintCommand: "npm run lint" })
        expect(patched.status).toBe(200)
        expect(patched.body).toMatchObject({
          enabled: true,
          projectType: "nodejs",
          lintCommand: "npm run lint",
          timeout: 600
        })
        expect((yield* ci.patchConfig({ lintCommand: null })).body.lintCommand).toBeNull()

        const created = yield* ci.putVariable("API_TOKEN", { value: "tok-123456", secret: true })
        expect(created.status).toBe(201)
        expect(created.body).toMatchObject({ name: "API_TOKEN", secret: true, value: null, hasValue: true })
        expect((yield* ci.putVariable("API_TOKEN", { value: "tok-654321", secret: true })).status).toBe(200)
        expect((yield* ci.putVariable("REGION", { value: "eu" })).body).toMatchObject({ value: "eu", secret: false })
        for (const name of ["SERVICE_REPO", "CI", "lower", "1ABC", "PATH"]) {
          expect((yield* ci.putVariable(name, { value: "x" })).status, name).toBe(400)
        }
        const listed = yield* ci.variables()
        expect(listed.body.count).toBe(2)
        expect(JSON.stringify(listed.body)).not.toContain("tok-")
        const removed = yield* request(ci.url("/ci/variables/REGION"), { method: "DELETE", token: repo.key })
        expect(removed.status).toBe(204)
        expect((yield* request(ci.url("/ci/variables/REGION"), { method: "DELETE", token: repo.key })).status).toBe(404)
        // A member's key (no code:admin) may read the config but not the variables.
        const member = (yield* addMember(baseUrl, repo.slug, `${repo.slug}-dev`)).key
        expect((yield* request(ci.url("/ci/config"), { token: member })).status).toBe(200)
        expect((yield* request(ci.url("/ci/variables"), { token: member })).status).toBe(403)
        // Another organization's repository is a 404.
        const other = yield* createRepo(baseUrl, { slug: slug("ci-other") })
        expect((yield* request(ci.url("/ci/config"), { token: other.key })).status).toBe(404)
      }).pipe(Effect.scoped),
    150000
  )

  it.effect(
    "a job sees the spec's environment and the variables; secrets are masked even split across chunks; logs stream while running",
    () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestApp
        const git = yield* gitClient
        const secret = "s3cr3t-value-42"
        const script = `
const s = process.env.MY_TOKEN
for (const k of ["CI", "SERVICE_CI", "SERVICE_RUN_ID", "SERVICE_REPO", "SERVICE_BRANCH", "SERVICE_COMMIT", "SERVICE_PR_NUMBER", "REGION", "HOME", "PATH"]) console.log(k + "=" + process.env[k])
process.stdout.write("token:" + s.slice(0, 6))
setTimeout(() => {
  process.stdout.write(s.slice(6) + "\\n")
  console.log("waiting")
  setTimeout(() => console.log("finished"), 2500)
}, 400)
`
        const { ci, head, repo } = yield* ciRepo(git, baseUrl, slug("ci-env"), {
          config: { installCommand: "echo install", testCommand: "node print.js" },
          files: { "print.js": script }
        }).pipe(
          Effect.tap(({ ci }) =>
            Effect.all([
              ci.putVariable("MY_TOKEN", { value: secret, secret: true }),
              ci.putVariable("REGION", { value: "eu" })
            ])
          )
        )
        // The push above ran before the variables existed: run again now.
        const first = yield* ci.completed(1)
        const triggered = yield* ci.trigger({ branch: "main" })
        expect(triggered.status).toBe(201)
        expect(triggered.body).toMatchObject({ number: 2, event: "manual", branch: "main", commitSha: head })
        // While the test job runs, its log already holds what it printed.
        const running = yield* eventually(
          "test job running with output",
          Effect.gen(function*() {
            const detail = (yield* ci.run(2)).body
            const job = detail.jobs.find((j: any) => j.name === "test")
            if (job === undefined || job.status !== "running") return undefined
            const log = yield* ci.log(2, job.id)
            return log.text.includes("waiting") ? { detail, log } : undefined
          }),
          (value) => value !== undefined,
          { timeoutMs: 60_000, pollMs: 100 }
        )
        expect(running!.detail.run.status).toBe("running")
        expect(running!.log.type).toMatch(/^text\/plain/)
        expect(running!.log.text).not.toContain("finished")

        const done = yield* ci.completed(2)
        expect(done.run.conclusion).toBe("success")
        const log = (yield* ci.log(2, done.jobs.find((j: any) => j.name === "test").id)).text
        expect(log).toContain("CI=true\nSERVICE_CI=true\n")
        expect(log).toContain(`SERVICE_RUN_ID=${done.run.id}\n`)
        expect(log).toContain(`SERVICE_REPO=${repo.slug}/${repo.name}\n`)
        expect(log).toContain("SERVICE_BRANCH=main\n")
        expect(log).toContain(`SERVICE_COMMIT=${head}\n`)
        expect(log).toContain("SERVICE_PR_NUMBER=undefined\n")
        expect(log).toContain("REGION=eu\n")
        expect(log).toContain("HOME=/home/ci\n")
        expect(log).toContain("token:***\n")
        expect(log).not.toContain(secret)
        expect(log).not.toContain(secret.slice(0, 6))
        expect(log).toContain("finished")
        expect(first.run.number).toBe(1)
        expect((yield* ci.log(2, "job_nope")).status).toBe(404)
      }).pipe(Effect.scoped),
    150000
  )

  it.effect(
    "cancel stops a running job's whole process tree; rerun runs the commit again; completed runs cannot be cancelled",
    () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestApp
        const git = yield* gitClient
        const hang = `const cp = require("child_process")
cp.spawn("sleep", ["3131"], { stdio: "ignore" })
console.log("running")
setInterval(() => {}, 1000)
`
        const { ci } = yield* ciRepo(git, baseUrl, slug("ci-cancel"), {
          config: { installCommand: "echo install", testCommand: "node hang.js", lintCommand: "echo lint" },
          files: { "hang.js": hang }
        })
        yield* eventually(
          "test job running",
          Effect.map(ci.run(1), (r) => r.body.jobs ?? []),
          (jobs: any) => jobs.some((j: any) => j.name === "test" && j.status === "running"),
          { timeoutMs: 60_000 }
        )
        const cancelled = yield* ci.cancel(1)
        expect(cancelled.status).toBe(200)
        expect(cancelled.body).toMatchObject({ number: 1, status: "completed", conclusion: "cancelled" })
        const detail = (yield* ci.run(1)).body
        expect(detail.jobs.map((j: any) => `${j.name}:${j.conclusion}`)).toEqual([
          "install:success",
          "lint:success",
          "test:cancelled"
        ])
        expect(detail.testSummary).toBeNull()
        const statuses = (yield* ci.statuses(detail.run.commitSha)).body.statuses
        expect(statuses[0]).toMatchObject({ context: "ci/test", state: "error" })
        expect((yield* ci.cancel(1)).status).toBe(409)
        // The job's child process went with it.
        expect(hostProcesses("sleep 3131")).toEqual([])

        const rerun = yield* ci.rerun(1)
        expect(rerun.status).toBe(201)
        expect(rerun.body).toMatchObject({ number: 2, rerunOf: 1, commitSha: detail.run.commitSha, status: "queued" })
        yield* eventually(
          "rerun's test job running",
          Effect.map(ci.run(2), (r) => r.body.jobs ?? []),
          (jobs: any) => jobs.some((j: any) => j.name === "test" && j.status === "running"),
          { timeoutMs: 60_000 }
        )
        expect((yield* ci.cancel(2)).body.conclusion).toBe("cancelled")
        expect((yield* ci.cancel(99)).status).toBe(404)
      }).pipe(Effect.scoped),
    150000
  )

  it.effect(
    "a job past its timeout is killed and fails; a commit without a project fails at once saying what was looked for",
    () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestApp
        const git = yield* gitClient
        const { ci } = yield* ciRepo(git, baseUrl, slug("ci-timeout"), {
          config: { timeout: 10, installCommand: "echo install", testCommand: "echo start; sleep 120; echo never" },
          files: { "README.md": "x\n" }
        })
        const started = Date.now()
        const timedOut = yield* ci.completed(1)
        expect(Date.now() - started).toBeLessThan(60_000)
        expect(timedOut.run.conclusion).toBe("failure")
        const test = timedOut.jobs.find((j: any) => j.name === "test")
        expect(test).toMatchObject({ conclusion: "failure", exitCode: null })
        expect(test.message).toMatch(/Timed out after 10 seconds/)
        expect((yield* ci.log(1, test.id)).text).not.toContain("never")

        const bare = yield* ciRepo(git, baseUrl, slug("ci-none"), { files: { "README.md": "nothing to build\n" } })
        const nothing = yield* bare.ci.completed(1)
        expect(nothing.run.conclusion).toBe("failure")
        expect(nothing.run.message).toMatch(/No project detected \(looked for package\.json, go\.mod/)
        expect(nothing.jobs).toEqual([])
      }).pipe(Effect.scoped),
    150000
  )

  it.effect(
    "manual runs: the branch head by default, a reachable commit, 400 for an unknown branch or unreachable commit",
    () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestApp
        const git = yield* gitClient
        const { ci, dir, head, repo } = yield* ciRepo(git, baseUrl, slug("ci-manual"), {
          config: { triggerOnPush: false, installCommand: "true", testCommand: "true" },
          files: { "README.md": "one\n" }
        })
        const second = yield* pushCommit(git, dir, { "README.md": "two\n" })
        yield* git.ok(["checkout", "-q", "-b", "side", head!], { cwd: dir })
        const side = yield* pushCommit(git, dir, { "side.txt": "side\n" }, "side")
        // triggerOnPush is off: nothing ran.
        expect((yield* ci.runs()).body.count).toBe(0)
        const live = yield* connectLive(liveUrl(baseUrl, "/api/v1/live"), { authorization: `Bearer ${repo.key}` })
        const publicLive = yield* connectLive(liveUrl(baseUrl, `/api/v1/live/${repo.slug}`))
        expect((yield* ci.trigger({ branch: "main" })).body).toMatchObject({ number: 1, commitSha: second })
        expect((yield* ci.trigger({ branch: "main", commitSha: head })).body).toMatchObject({
          number: 2,
          commitSha: head
        })
        expect((yield* ci.trigger({ branch: "main", commitSha: side })).status).toBe(400)
        expect((yield* ci.trigger({ branch: "nope" })).status).toBe(400)
        expect((yield* ci.trigger({ branch: "main", commitSha: "xyz" })).status).toBe(400)
        expect((yield* ci.completed(2)).run.conclusion).toBe("success")
        // Run and job changes reach the organization's authenticated live stream, not the public one.
        const changes = yield* eventually(
          "ci.run messages",
          Effect.sync(() => live.messages.filter((m) => m.type === "ci.run" && m.data.run.number === 2)),
          (messages) => messages.some((m) => m.data.run.status === "completed")
        )
        expect(changes.map((m) => m.data.run.status)).toContain("queued")
        expect(changes.some((m) => m.data.job?.name === "test" && m.data.job.status === "completed")).toBe(true)
        expect(publicLive.messages.filter((m) => m.type === "ci.run")).toEqual([])
      }).pipe(Effect.scoped),
    150000
  )

  it.effect(
    "plan concurrency: on Free two runs never hold slots at once; the older runs first",
    () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestApp
        const git = yield* gitClient
        const { ci } = yield* ciRepo(git, baseUrl, slug("ci-slots"), {
          plan: "free",
          config: { triggerOnPush: false, installCommand: "true", testCommand: "sleep 2" },
          files: { "README.md": "x\n" }
        })
        yield* ci.trigger({ branch: "main" })
        yield* ci.trigger({ branch: "main" })
        let both = false
        yield* eventually("both runs completed", Effect.map(ci.runs(), (r) => r.body.runs), (runs: any) => {
          if (runs.filter((run: any) => run.status === "running").length > 1) both = true
          return runs.every((run: any) => run.status === "completed")
        }, { timeoutMs: 90_000, pollMs: 300 }) // Free allows 50 requests a minute
        expect(both).toBe(false)
        const one = (yield* ci.run(1)).body.run
        const two = (yield* ci.run(2)).body.run
        expect(new Date(two.startedAt).getTime()).toBeGreaterThanOrEqual(new Date(one.completedAt).getTime())
      }).pipe(Effect.scoped),
    150000
  )

  it.effect(
    "a run started with the month's CI minutes used up ends at once with an error saying so",
    () =>
      Effect.gen(function*() {
        const { baseUrl, sql } = yield* TestApp
        const git = yield* gitClient
        const { ci, head, repo } = yield* ciRepo(git, baseUrl, slug("ci-minutes"), {
          plan: "free",
          config: { triggerOnPush: false, installCommand: "true", testCommand: "true" },
          files: { "README.md": "x\n" }
        })
        // Free has 100 minutes a month: a finished run of this month used them all.
        yield* sql`
        INSERT INTO ci_runs (id, repo_id, org_id, number, event, branch, commit_sha, status, conclusion,
                             max_concurrent, minutes_limit, started_at, completed_at)
        VALUES ('run_used', ${repo.id}, ${repo.org.id}, 1000, 'manual', 'main', ${head!}, 'completed', 'success',
                1, 100, now(), now())`.pipe(Effect.orDie)
        yield* sql`
        INSERT INTO ci_jobs (id, run_id, position, name, command, status, conclusion, minutes, started_at, completed_at)
        VALUES ('job_used', 'run_used', 0, 'test', 'true', 'completed', 'success', 100, now(), now())`.pipe(
          Effect.orDie
        )
        const triggered = yield* ci.trigger({ branch: "main" })
        expect(triggered.status).toBe(201)
        const done = yield* ci.completed(triggered.body.number)
        expect(done.run.conclusion).toBe("error")
        expect(done.run.message).toMatch(/used its 100 CI minutes of this month/)
        expect(done.jobs).toEqual([])
      }).pipe(Effect.scoped),
    150000
  )

  it.effect("the workspace holds the commit's tree with Git LFS files smudged", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestApp
      const git = yield* gitClient
      const { ci, dir } = yield* ciRepo(git, baseUrl, slug("ci-lfs"), {
        config: { installCommand: "true", testCommand: "sha256sum data.bin notes.txt" }
      })
      // Hooks in this work tree (it exists already), so the push uploads the objects.
      yield* git.ok(["lfs", "install", "--local"], { cwd: dir })
      yield* git.ok(["lfs", "track", "*.bin"], { cwd: dir })
      const data = randomBytes(200 * 1024)
      yield* pushCommit(git, dir, { "data.bin": data, "notes.txt": "plain\n" })
      // The pushed tree holds a pointer; the job sees the content.
      expect(yield* git.ok(["cat-file", "-p", "HEAD:data.bin"], { cwd: dir })).toMatch(/^version https:\/\/git-lfs/)
      const done = yield* ci.completed(1)
      expect(done.run.conclusion).toBe("success")
      const log = (yield* ci.log(1, done.jobs.find((j: any) => j.name === "test").id)).text
      expect(log).toContain(`${createHash("sha256").update(data).digest("hex")}  data.bin`)
      expect(log).toContain(`${createHash("sha256").update("plain\n").digest("hex")}  notes.txt`)
    }).pipe(Effect.scoped), 150000)
})
