import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { diffAgainstMergeBase, diffSinceMergeBase, mergeBase } from "../../services/pulls/PullDiff.ts"
import { tempDir } from "../support/tempDir.ts"

/** A repository whose `a` and `b` have two merge bases (a criss-cross merge), so the choice between them shows. */
const crissCross = (dir: string) => {
  const git = (...args: Array<string>) =>
    execFileSync("git", args, {
      cwd: dir,
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: "T",
        GIT_AUTHOR_EMAIL: "t@x",
        GIT_COMMITTER_NAME: "T",
        GIT_COMMITTER_EMAIL: "t@x",
        GIT_CONFIG_NOSYSTEM: "1",
        GIT_CONFIG_GLOBAL: "/dev/null"
      }
    }).toString().trim()
  const write = (name: string, text: string) => Fs.writeFileSync(Path.join(dir, name), text)
  git("init", "-q", "-b", "main", ".")
  write("base.txt", "base\n")
  git("add", "-A")
  git("commit", "-q", "-m", "base")
  git("checkout", "-q", "-b", "a")
  write("a.txt", "a1\n")
  git("add", "-A")
  git("commit", "-q", "-m", "a1")
  git("checkout", "-q", "-b", "b", "main")
  write("b.txt", "b1\n")
  git("add", "-A")
  git("commit", "-q", "-m", "b1")
  const b1 = git("rev-parse", "HEAD")
  git("checkout", "-q", "a")
  const a1 = git("rev-parse", "HEAD")
  git("merge", "-q", "--no-edit", b1)
  write("a.txt", "a2\n")
  git("commit", "-q", "-am", "a2")
  git("checkout", "-q", "b")
  git("merge", "-q", "--no-edit", a1)
  write("b.txt", "b2\nmore\n")
  write("new.txt", "new\n")
  git("add", "-A")
  git("commit", "-q", "-m", "b2")
  return { a: git("rev-parse", "a"), b: git("rev-parse", "b"), bases: git("merge-base", "--all", "a", "b").split("\n") }
}

describe("pull request diff", () => {
  it.effect("one git process (`target...head`) gives the diff against the merge base, also with two merge bases", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("canopy-pulldiff-")
      const { a, b, bases } = crissCross(dir)
      expect(bases).toHaveLength(2)
      const objects = { dir: Path.join(dir, ".git"), env: {} }
      const two = yield* diffAgainstMergeBase(objects, a, b)
      const one = yield* diffSinceMergeBase(objects, a, b)
      expect(one).toBe(two)
      expect(one).toContain("+new")
      // And the other way round, with the base git picks first.
      expect(bases).toContain(yield* mergeBase(objects, b, a))
      expect(yield* diffSinceMergeBase(objects, b, a)).toBe(yield* diffAgainstMergeBase(objects, b, a))
    }).pipe(Effect.scoped))
})
