import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { describe, it as plain } from "vitest"
import { RefUpdateCheck, type RefUpdateCheckFn } from "../../services/git/RefUpdates.ts"
import { Repositories } from "../../services/git/Repositories.ts"
import {
  editLines,
  splitLines,
  SuggestionCommits,
  type SuggestionInput
} from "../../services/pulls/SuggestionCommit.ts"
import { commit, createRepo, type GitClient, gitClient } from "../git/gitClient.ts"
import { startApp } from "../support/app.ts"

type Services = SuggestionCommits | Repositories | SqlClient.SqlClient
class TestApp extends Context.Service<TestApp, {
  readonly baseUrl: string
  readonly context: Context.Context<Services>
}>()("test/pulls/SuggestionCommitApp") {}
const TestAppLive = Layer.effect(
  TestApp,
  Effect.map(startApp(), (app) => ({ baseUrl: app.baseUrl, context: app.context as any }))
)

const FILE = "src/app.ts"
const ORIGINAL = "line 1\nline 2\nline 3\nline 4\n"

const suggestion = (orgSlug: string, over: Partial<SuggestionInput>) =>
  Effect.gen(function*() {
    const repos = yield* Repositories
    const repo = Option.getOrThrow(yield* repos.find(orgSlug, "r"))
    const input: SuggestionInput = {
      repo,
      branch: "feature",
      expectedHeadSha: "0".repeat(40),
      path: FILE,
      startLine: 2,
      endLine: 3,
      originalLines: ["line 2", "line 3"],
      replacement: "line two\nline three\nline three and a half\n",
      author: { name: "Sug Gester", email: "sug@example.com" },
      committer: { name: "Ap Plier", email: "applier@example.com" },
      message: "Apply suggestion from review",
      ...over
    }
    return yield* (yield* SuggestionCommits).applySuggestion(input)
  })

/** A repository with `main` and a `feature` branch holding FILE; returns the work tree. */
const setUp = (git: GitClient, baseUrl: string, slug: string) =>
  Effect.gen(function*() {
    const org = yield* createRepo(baseUrl, { slug })
    const dir = git.dir(`work-${slug}`)
    yield* git.ok(["init", "-q", dir])
    yield* commit(git, dir, { [FILE]: ORIGINAL, "README.md": "hello\n" }, "initial")
    yield* git.ok(["push", "-q", org.url, "main"], { cwd: dir })
    yield* git.ok(["checkout", "-q", "-b", "feature"], { cwd: dir })
    const head = yield* commit(git, dir, { "other.txt": "x\n" }, "feature work")
    yield* git.ok(["push", "-q", org.url, "feature"], { cwd: dir })
    return { org, dir, head }
  })

const remoteTip = (git: GitClient, url: string) =>
  Effect.map(git.ok(["ls-remote", url, "refs/heads/feature"]), (out) => out.split("\t")[0])

/** The edited text, or the refusal. */
const edited = (content: string | Buffer, input: Parameters<typeof editLines>[1]) => {
  const edit = editLines(content, input)
  return edit._tag === "Edited" ? edit.content.toString("latin1") : edit
}

describe("editLines (pure)", () => {
  plain("replaces the lines and keeps the file's final newline state, line endings and other bytes", () => {
    const input = { path: "f", startLine: 2, endLine: 2, originalLines: ["b"], replacement: "B\n" }
    expect(edited("a\nb\nc\n", input)).toBe("a\nB\nc\n")
    expect(edited("a\nb\nc", input)).toBe("a\nB\nc")
    expect(edited("a\nb", input)).toBe("a\nB")
    expect(edited("a\nb", { ...input, replacement: "" })).toBe("a")
    expect(edited("a\r\nb\r\nc\r\n", { ...input, replacement: "B\nB2" })).toBe("a\r\nB\r\nB2\r\nc\r\n")
    expect(edited("a\nb\nc\n", { ...input, replacement: "" })).toBe("a\nc\n")
    // A line that is not UTF-8 outside the range is kept byte for byte.
    const latin1 = Buffer.concat([Buffer.from([0xe9, 0x0a]), Buffer.from("b\n")])
    expect(edited(latin1, input)).toBe("\xe9\nB\n")
  })
  plain("refuses changed or out-of-range lines as outdated, and an identical replacement as noop", () => {
    const input = { path: "f", startLine: 2, endLine: 2, originalLines: ["b"], replacement: "B" }
    expect(edited("a\nX\nc\n", input)).toMatchObject({ _tag: "Refused", reason: "outdated" })
    expect(edited("a\n", input)).toMatchObject({ _tag: "Refused", reason: "outdated" })
    expect(edited("a\nb\n", { ...input, startLine: 0 })).toMatchObject({ reason: "outdated" })
    expect(edited("a\nb\n", { ...input, startLine: 3, endLine: 2 })).toMatchObject({ reason: "outdated" })
    expect(edited("a\nb\n", { ...input, replacement: "b\n" })).toMatchObject({ reason: "noop" })
    expect(edited("a\r\nb\r\n", { ...input, replacement: "b" })).toMatchObject({ reason: "noop" })
    expect(splitLines(Buffer.alloc(0))).toEqual([])
  })
})

layer(TestAppLive, { excludeTestServices: true, timeout: "180 seconds" })("SuggestionCommits", (it) => {
  it.effect("commits a suggestion to the branch: a fresh fetch shows it with the suggester as author", () =>
    Effect.gen(function*() {
      const { baseUrl, context } = yield* TestApp
      const git = yield* gitClient
      const { head, org } = yield* setUp(git, baseUrl, "sugapply")
      // A later unrelated commit does not make the suggestion outdated.
      const committer = { id: org.user.id, name: "Ap Plier", email: "applier@example.com" }
      const { sha } = yield* Effect.provide(suggestion("sugapply", { expectedHeadSha: head, committer }), context)
      expect(yield* remoteTip(git, org.url)).toBe(sha)
      // The branch moved through the one ref-update path: a push event with the applier as sender.
      const [push] = yield* Effect.provide(
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          return yield* sql<{ data: any }>`
            SELECT data FROM domain_events WHERE type = 'push' AND data->>'after' = ${sha}`
        }),
        context
      ).pipe(Effect.orDie)
      expect(push.data).toMatchObject({ ref: "refs/heads/feature", before: head, sender: committer })
      expect(push.data.commits.map((c: any) => c.sha)).toEqual([sha])

      const clone = git.dir("sugapply-clone")
      yield* git.ok(["clone", "-q", "--branch", "feature", org.url, clone])
      const show = yield* git.ok(["log", "-1", "--format=%H%n%an <%ae>%n%cn <%ce>%n%P%n%s"], { cwd: clone })
      expect(show.trim().split("\n")).toEqual([
        sha,
        "Sug Gester <sug@example.com>",
        "Ap Plier <applier@example.com>",
        head,
        "Apply suggestion from review"
      ])
      expect(yield* git.ok(["show", `HEAD:${FILE}`], { cwd: clone })).toBe(
        "line 1\nline two\nline three\nline three and a half\nline 4\n"
      )
      // Only FILE changed; the repository is consistent for git.
      expect((yield* git.ok(["diff", "--name-only", "HEAD~1", "HEAD"], { cwd: clone })).trim()).toBe(FILE)
      yield* git.ok(["fsck", "--strict"], { cwd: clone })
    }))

  it.effect("refuses outdated, noop and missing suggestions and leaves the branch unchanged", () =>
    Effect.gen(function*() {
      const { baseUrl, context } = yield* TestApp
      const git = yield* gitClient
      const { dir, org } = yield* setUp(git, baseUrl, "sugrefuse")
      const changed = yield* commit(git, dir, { [FILE]: "line 1\nline 2 changed\nline 3\nline 4\n" }, "edit")
      yield* git.ok(["push", "-q", org.url, "feature"], { cwd: dir })

      const outdated = yield* Effect.provide(suggestion("sugrefuse", {}), context).pipe(Effect.flip)
      expect(outdated).toMatchObject({ _tag: "SuggestionRefused", reason: "outdated" })
      const noop = yield* Effect.provide(
        suggestion("sugrefuse", { startLine: 3, endLine: 3, originalLines: ["line 3"], replacement: "line 3\n" }),
        context
      ).pipe(Effect.flip)
      expect(noop.reason).toBe("noop")
      const gone = yield* Effect.provide(suggestion("sugrefuse", { path: "nope.txt" }), context).pipe(Effect.flip)
      expect(gone.reason).toBe("outdated")
      const branch = yield* Effect.provide(suggestion("sugrefuse", { branch: "ghost" }), context).pipe(Effect.flip)
      expect(branch.reason).toBe("missing")
      expect(yield* remoteTip(git, org.url)).toBe(changed)
    }))

  it.effect("a push between reading the tip and the compare-and-swap: re-checked, never a lost commit", () =>
    Effect.gen(function*() {
      const { baseUrl, context } = yield* TestApp
      const git = yield* gitClient
      const { dir, org } = yield* setUp(git, baseUrl, "sugrace")

      // The ref-update hook runs after the suggestion read the tip and before the CAS:
      // a real push lands there once.
      const racing = (files: Record<string, string>) => {
        let pushed: string | undefined
        const check: RefUpdateCheckFn = () =>
          Effect.gen(function*() {
            if (pushed !== undefined) return undefined
            pushed = yield* commit(git, dir, files, "concurrent push")
            yield* git.ok(["push", "-q", org.url, "feature"], { cwd: dir })
            return undefined
          })
        return { check, pushed: () => pushed }
      }

      // An unrelated concurrent change: the suggestion lands on top of it.
      const unrelated = racing({ "elsewhere.txt": "concurrent\n" })
      const { sha } = yield* Effect.provide(suggestion("sugrace", {}), context).pipe(
        Effect.provideService(RefUpdateCheck, unrelated.check)
      )
      expect(yield* remoteTip(git, org.url)).toBe(sha)
      yield* git.ok(["fetch", "-q", org.url, "feature"], { cwd: dir })
      expect((yield* git.ok(["rev-parse", "FETCH_HEAD~1"], { cwd: dir })).trim()).toBe(unrelated.pushed())
      expect(yield* git.ok(["show", `FETCH_HEAD:${FILE}`], { cwd: dir })).toContain("line two")
      yield* git.ok(["merge", "-q", "--ff-only", "FETCH_HEAD"], { cwd: dir })

      // A concurrent change of the same lines: outdated, and the concurrent push is kept.
      const conflicting = racing({ [FILE]: "line 1\nline 2\nline 3 edited concurrently\nline 4\n" })
      const refusal = yield* Effect.provide(
        suggestion("sugrace", {
          startLine: 5,
          endLine: 5,
          originalLines: ["line 4"],
          replacement: "line four"
        }),
        context
      ).pipe(Effect.provideService(RefUpdateCheck, conflicting.check), Effect.flip)
      expect(refusal.reason).toBe("outdated")
      expect(yield* remoteTip(git, org.url)).toBe(conflicting.pushed())
    }))

  it.effect("a ref update refused by a rule is a rejected suggestion, and the branch does not move", () =>
    Effect.gen(function*() {
      const { baseUrl, context } = yield* TestApp
      const git = yield* gitClient
      const { head, org } = yield* setUp(git, baseUrl, "sugrule")
      const refusal = yield* Effect.provide(suggestion("sugrule", {}), context).pipe(
        Effect.provideService(RefUpdateCheck, () => Effect.succeed("protected branch")),
        Effect.flip
      )
      expect(refusal).toMatchObject({ reason: "rejected", message: expect.stringContaining("protected branch") })
      expect(yield* remoteTip(git, org.url)).toBe(head)
    }))

  it.effect("concurrent suggestions on other lines of one file all land, none lost", () =>
    Effect.gen(function*() {
      const { baseUrl, context } = yield* TestApp
      const git = yield* gitClient
      const { head, org } = yield* setUp(git, baseUrl, "sugmany")
      const applied = yield* Effect.forEach(
        [1, 2, 3, 4],
        (line) =>
          Effect.provide(
            suggestion("sugmany", {
              startLine: line,
              endLine: line,
              originalLines: [`line ${line}`],
              replacement: `LINE ${line}`,
              message: `suggestion ${line}`
            }),
            context
          ),
        { concurrency: 4 }
      )
      const clone = git.dir("sugmany-clone")
      yield* git.ok(["clone", "-q", "--branch", "feature", org.url, clone])
      expect(yield* git.ok(["show", `HEAD:${FILE}`], { cwd: clone })).toBe("LINE 1\nLINE 2\nLINE 3\nLINE 4\n")
      const chain = (yield* git.ok(["rev-list", `${head}..HEAD`], { cwd: clone })).trim().split("\n")
      expect(chain.sort()).toEqual(applied.map((result) => result.sha).sort())
    }))
})
